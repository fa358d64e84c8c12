"""A real nats-server on loopback, started and stopped by the project's own scripts: the
end-to-end tests, bench/run-event-latency --publish, bench/run-publish-rate and
scripts/run-nats-demo. JetStream on, its store in a directory of the caller's, its log beside it.

    from nats_server import NatsServer       # with scripts/lib on sys.path
    server = NatsServer(workdir, port=4222)  # returns once it accepts connections
    server.url                               # nats://127.0.0.1:4222
    server.stop()                            # SIGTERM and wait; kill() for SIGKILL
"""
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request

POLL_S = 0.02  # polling period while waiting for the server to listen


def loopback_port():
    """A TCP port the kernel says is free now on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class NatsServer:
    """nats-server -js on 127.0.0.1:`port` (or `listen`: "0.0.0.0" for other namespaces too)
    with its monitoring endpoint on `monitor`; `cluster` is (this server's route port, the other
    servers' route ports); `config` is configuration file text for what has no flag (limits,
    slow-consumer settings)."""

    def __init__(self, workdir, port=None, monitor=None, name="n1", cluster=None, timeout=30,
                 config=None, listen="127.0.0.1"):
        binary = shutil.which("nats-server")
        if not binary:
            raise RuntimeError("nats-server is not installed (scripts/install-deps installs it)")
        self.port = port or loopback_port()
        self.monitor = monitor or loopback_port()
        self.store = os.path.join(workdir, f"nats-{name}")
        self.log = os.path.join(workdir, f"nats-{name}.log")
        self.timeout = timeout
        self.command = [binary, "-js", "-a", listen, "-p", str(self.port), "-sd", self.store,
                        "-m", str(self.monitor), "-n", name]
        if config:
            path = os.path.join(workdir, f"nats-{name}.conf")
            with open(path, "w", encoding="utf-8") as f:
                f.write(config)
            self.command += ["-c", path]  # the flags above take precedence
        if cluster:
            route, others = cluster
            self.command += ["--cluster_name", "signet", "--cluster", f"nats://127.0.0.1:{route}",
                             "--routes", ",".join(f"nats://127.0.0.1:{p}" for p in others)]
        self.process = None
        self.start()

    def start(self):
        """Starts the server and returns once it accepts connections (raises if it exits)."""
        with open(self.log, "a", encoding="utf-8") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=log)
        deadline = time.monotonic() + self.timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(POLL_S)
        with open(self.log, encoding="utf-8") as log:
            tail = log.read()[-2000:]
        self.stop()
        raise RuntimeError(f"nats-server did not listen on {self.port}:\n{tail}")

    def monitor_page(self, page):
        """A page of the server's monitoring endpoint, parsed."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.monitor}/{page}", timeout=10) as r:
            return json.loads(r.read())

    def jsz(self):
        """The server's JetStream report, with the streams and their configs."""
        return self.monitor_page("jsz?streams=true&config=true")

    def kill(self):
        self.process.kill()
        self.process.wait(timeout=30)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    @property
    def pid(self):
        return self.process.pid

    @property
    def url(self):
        return f"nats://127.0.0.1:{self.port}"
