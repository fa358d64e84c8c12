#include <algorithm>

#include <signet/md/cme/mdp3_channel.hpp>

namespace signet::md::cme {

mdp3_channel::mdp3_channel(mdp3_channel_options const& options)
    : options_(options)
    , order_budget_(std::make_unique<mdp3_order_budget>(
          mdp3_order_budget{.limit = options.max_orders, .used = 0}))
    , held_(options.held_packets, options.held_bytes)
    , tracker_(sequence_tracker_options{.first_sequence = sequence_tracker::late_join,
                                        .max_jump = options.max_sequence_jump}) {}

mdp3_instrument* mdp3_channel::lookup(std::int32_t security_id) noexcept {
    std::size_t const* const i = index_.find(security_id);
    return i == nullptr ? nullptr : &instruments_[*i];
}

mdp3_instrument const* mdp3_channel::find(std::int32_t security_id) const noexcept {
    std::size_t const* const i = index_.find(security_id);
    return i == nullptr ? nullptr : &instruments_[*i];
}

void mdp3_channel::on_definition(std::span<std::byte const> packet, std::uint64_t now_ns) {
    packet_walk const walk = for_each_message(packet, [&](message const& m) {
        if (m.schema_id != schema_id ||
            m.template_id != template_id::instrument_definition_future) {
            return; // other definition templates (options, spreads) are not books of this kind
        }
        auto const d = decode_instrument_definition_future(m);
        if (!d) {
            ++stats_.malformed_messages;
            return;
        }
        ++stats_.definitions;
        if (lookup(d->security_id) != nullptr || d->security_update_action == 'D') {
            return; // known already (the loop repeats); deletions keep the book until a reset
        }
        int const depth = d->outright_depth();
        mdp3_instrument i{.security_id = d->security_id,
                          .symbol = d->symbol,
                          .tick = d->min_price_increment,
                          .display_factor = d->display_factor,
                          .trading_status = d->trading_status,
                          .security_group = d->security_group,
                          .asset = d->asset,
                          .book = mdp3_price_book(depth > 0 ? static_cast<std::size_t>(depth) : 10),
                          .orders = mdp3_order_book(order_budget_.get())};
        if (!index_.insert(d->security_id, instruments_.size())) { // full: a definition is a
            index_.rehash(2 * index_.capacity());                  // control-path event
            (void)index_.insert(d->security_id, instruments_.size());
        }
        instruments_.push_back(std::move(i));
        kept_.emplace_back(); // its kept-snapshot slot: grown with the definitions only
        kept_bytes_.resize(instruments_.size() * options_.kept_snapshot_bytes);
        if (sink_ != nullptr) {
            emit_definition(instruments_.back(), now_ns);
        }
        if (started_) {
            make_stale(instruments_.back(), now_ns); // its book missed what came before
            // The loop may have shown it before it was defined: counted in seen_in_loop_ as
            // undefined, it is seen (its snapshot is awaited), not absent from the loop.
            if (std::find(seen_undefined_.begin(), seen_undefined_.end(), d->security_id) !=
                seen_undefined_.end()) {
                instruments_.back().seen_in_recovery = recovery_id_;
            }
        }
    });
    stats_.malformed_packets += walk.malformed ? 1 : 0;
}

void mdp3_channel::on_incremental(std::span<std::byte const> packet, std::uint64_t now_ns) {
    std::optional<packet_header> const header = validate_packet(packet);
    if (!header) {
        ++stats_.malformed_packets; // never claims a MsgSeqNum
        return;
    }
    sequence_step const step = tracker_.track(header->sequence, 1);
    if (!step.ignored) {
        on_sequenced(packet, header->sequence, step, now_ns);
    }
}

void mdp3_channel::on_sequenced(std::span<std::byte const> packet, std::uint64_t sequence,
                                sequence_step const& step, std::uint64_t now_ns,
                                std::uint64_t receive_ns) {
    if (step.fresh == 0 || (sequence < next_sequence_ && !step.resynced)) {
        return; // line B's copy, a resend, or a packet the loop showed lost (on_time)
    }
    // A gap in front of it, unless it is one the loop showed already (next_sequence_ is past it).
    if ((!started_ && sequence != 1) || (step.missing != 0 && sequence > next_sequence_) ||
        step.resynced) [[unlikely]] {
        on_discontinuity(now_ns);
    }
    ++stats_.incremental_packets;
    next_sequence_ = sequence + 1;
    last_packet_ns_ = now_ns;
    started_ = true;
    if (recovering_) [[unlikely]] {
        hold(sequence, packet);
    }
    applying_sequence_ = sequence;
    event_sequence_ = sequence;
    receive_ns_ = receive_ns;
    stats_.incremental_messages += apply_packet(packet, now_ns, nullptr).messages;
    receive_ns_ = 0;
    if (sequence >= kept_first_) [[unlikely]] { // a kept snapshot's packet: it applies now
        apply_kept_snapshots(now_ns);
        finish_recovery_if_done(now_ns);
    }
}

void mdp3_channel::on_discontinuity(std::uint64_t now_ns) {
    // A late start, packets lost, or the stream moved: any instrument may have missed data,
    // and which ones is unknown (an instrument's next entry may be far off, or never come), so
    // every book and by-order book waits for its snapshot. The stale events come before the
    // packet that showed the gap: they carry the last packet applied.
    bool const was_recovering = recovering_;
    for (mdp3_instrument& i : instruments_) {
        make_stale(i, now_ns);
    }
    start_recovery(now_ns);
    if (was_recovering) {
        restart_loop(now_ns); // what the loop showed before the loss says nothing after it
    }
    held_.clear(); // the store holds consecutive packets from here on
}

void mdp3_channel::hold(std::uint64_t sequence, std::span<std::byte const> packet) {
    std::uint64_t const evicted = held_.evicted();
    if (!held_.append(sequence, packet)) {
        held_.clear();
        (void)held_.append(sequence, packet);
    }
    stats_.held_evicted += held_.evicted() - evicted;
}

packet_walk mdp3_channel::apply_packet(std::span<std::byte const> packet, std::uint64_t now_ns,
                                       mdp3_instrument* only, replay kind) {
    // Entries that carry their instrument's RptSeq and change no book: a decoded message
    // (nullopt: malformed), the counter of applied entries, what an entry does.
    auto const sequenced = [&](auto const& decoded, std::uint64_t& applied, auto&& apply) {
        if (!decoded) {
            ++stats_.malformed_messages;
            return;
        }
        decoded->entries.for_each([&](auto const& e) {
            mdp3_instrument* const i = lookup(e.security_id);
            if (i == nullptr) {
                stats_.unknown_instrument_entries += only == nullptr ? 1 : 0;
                return;
            }
            if ((only != nullptr && i != only) || (only == nullptr && i->stale) ||
                !next_in_sequence(*i, e.rpt_seq, now_ns)) {
                return;
            }
            apply(*i, e);
            ++(only != nullptr ? stats_.replayed_entries : applied);
        });
    };
    packet_walk const walk = for_each_message(packet, [&](message const& m) {
        if (m.schema_id != schema_id) {
            ++stats_.unknown_messages;
            return;
        }
        switch (m.template_id) {
        case template_id::incremental_order_book: {
            if (kind == replay::mbp) {
                return;
            }
            carries_orders_ = true;
            auto const b = decode_incremental_order_book(m);
            if (!b) {
                ++stats_.malformed_messages;
                return;
            }
            b->entries.for_each([&](order_book_entry const& e) {
                mdp3_instrument* const i = lookup(e.security_id);
                if (i == nullptr) {
                    stats_.unknown_instrument_entries += only == nullptr ? 1 : 0;
                    return;
                }
                if ((only != nullptr && i != only) || (only == nullptr && i->orders_stale) ||
                    applying_sequence_ <= i->orders_as_of) {
                    return; // another's, waiting for a snapshot, or in the snapshot already
                }
                switch (i->orders.apply(e)) {
                case book_update::applied:
                    ++(only != nullptr ? stats_.replayed_entries : stats_.order_entries);
                    if (sink_ != nullptr) {
                        emit_order(*i, e, now_ns);
                    }
                    break;
                case book_update::inconsistent:
                    ++stats_.inconsistent_updates;
                    i->orders_stale = true;
                    start_recovery(now_ns);
                    break;
                case book_update::full:
                    ++stats_.order_budget_full;
                    i->orders_stale = true;
                    start_recovery(now_ns);
                    break;
                case book_update::ignored:
                    break;
                }
            });
            return;
        }
        case template_id::incremental_book: {
            if (kind == replay::mbo) {
                return;
            }
            auto const b = decode_incremental_book(m);
            if (!b) {
                ++stats_.malformed_messages;
                return;
            }
            transact_time_ = b->transact_time;
            b->entries.for_each([&](book_entry const& e) {
                mdp3_instrument* const i = lookup(e.security_id);
                if (i == nullptr) {
                    stats_.unknown_instrument_entries += only == nullptr ? 1 : 0;
                    return;
                }
                if ((only != nullptr && i != only) || (only == nullptr && i->stale) ||
                    !next_in_sequence(*i, e.rpt_seq, now_ns)) {
                    return;
                }
                if (sink_ != nullptr) [[unlikely]] {
                    book_copy const before = copy_of(i->book);
                    if (i->book.apply(e) == book_update::inconsistent) {
                        ++stats_.inconsistent_updates;
                        make_stale(*i, now_ns);
                        return;
                    }
                    emit_book_changes(*i, before, now_ns);
                } else if (i->book.apply(e) == book_update::inconsistent) {
                    ++stats_.inconsistent_updates;
                    make_stale(*i, now_ns);
                    return;
                }
                ++(only != nullptr ? stats_.replayed_entries : stats_.book_entries);
            });
            return;
        }
        case template_id::incremental_trade_summary:
            if (kind != replay::mbo) {
                auto const t = decode_incremental_trade_summary(m);
                transact_time_ = t ? t->transact_time : 0;
                sequenced(t, stats_.trade_entries, [&](mdp3_instrument& i, trade_entry const& e) {
                    if (sink_ != nullptr) { // no book change: a trade (and its RptSeq)
                        emit_trade(i, e, now_ns);
                    }
                });
            }
            return;
        case template_id::incremental_volume:
            if (kind != replay::mbo) {
                sequenced(decode_incremental_volume(m), stats_.statistics_entries,
                          [](mdp3_instrument& i, auto const& e) { i.statistics.apply(e); });
            }
            return;
        case template_id::incremental_daily_statistics:
            if (kind != replay::mbo) {
                sequenced(decode_incremental_daily_statistics(m), stats_.statistics_entries,
                          [](mdp3_instrument& i, auto const& e) { i.statistics.apply(e); });
            }
            return;
        case template_id::incremental_limits_banding:
            if (kind != replay::mbo) {
                sequenced(decode_incremental_limits_banding(m), stats_.statistics_entries,
                          [](mdp3_instrument& i, auto const& e) { i.statistics.apply(e); });
            }
            return;
        case template_id::incremental_session_statistics:
            if (kind != replay::mbo) {
                sequenced(decode_incremental_session_statistics(m), stats_.statistics_entries,
                          [](mdp3_instrument& i, auto const& e) { i.statistics.apply(e); });
            }
            return;
        case template_id::security_status:
            if (only == nullptr) {
                if (auto const s = decode_security_status(m); !s) {
                    ++stats_.malformed_messages;
                } else if (s->security_id == null_int32) {
                    // The instruments of its group, of its asset, or of both when it names both.
                    constexpr std::array<char, 6> none{};
                    bool const group = s->security_group != none;
                    bool const asset = s->asset != none;
                    for (mdp3_instrument& i : instruments_) {
                        if ((group || asset) && (!group || i.security_group == s->security_group) &&
                            (!asset || i.asset == s->asset)) {
                            apply_status(i, *s, now_ns);
                        }
                    }
                } else if (mdp3_instrument* const i = lookup(s->security_id)) {
                    apply_status(*i, *s, now_ns);
                }
            }
            return;
        case template_id::channel_reset:
            if (only == nullptr) {
                if (decode_channel_reset(m)) {
                    reset_channel();
                } else {
                    ++stats_.malformed_messages;
                }
            }
            return;
        case template_id::admin_heartbeat:
            return;
        default:
            stats_.unknown_messages += only == nullptr ? 1 : 0;
            return;
        }
    });
    if (walk.malformed && only == nullptr) {
        ++stats_.malformed_packets;
    }
    return walk;
}

bool mdp3_channel::next_in_sequence(mdp3_instrument& i, std::uint32_t rpt_seq,
                                    std::uint64_t now_ns) noexcept {
    if (rpt_seq <= i.rpt_seq) {
        return false; // in the book already (a snapshot, or a replay) or old
    }
    if (rpt_seq != i.rpt_seq + 1) {
        ++stats_.rpt_seq_gaps;
        make_stale(i, now_ns);
        return false;
    }
    i.rpt_seq = rpt_seq;
    return true;
}

void mdp3_channel::make_stale(mdp3_instrument& i, std::uint64_t now_ns) noexcept {
    if (!i.stale && sink_ != nullptr) {
        emit(event_kind::instrument_stale, i, now_ns);
    }
    i.stale = true;
    i.orders_stale = true;
    start_recovery(now_ns);
}

void mdp3_channel::start_recovery(std::uint64_t now_ns) noexcept {
    if (recovering_) {
        return;
    }
    recovering_ = true;
    ++stats_.recoveries;
    recovery_started_ns_ = now_ns;
    restart_loop(now_ns);
}

void mdp3_channel::restart_loop(std::uint64_t now_ns) noexcept {
    ++recovery_id_;
    seen_in_loop_ = 0;
    loop_size_ = 0;
    seen_undefined_.clear();
    order_seen_in_loop_ = 0;
    order_loop_size_ = 0;
    last_snapshot_ns_ = now_ns;
}

void mdp3_channel::note_loop_position(std::uint64_t last, std::uint64_t now_ns) noexcept {
    // Packet `last` was sent. Past the packets applied (and believable: the sequencing's guard),
    // it and those before it are awaited; a new wait starts only once the last one is over.
    if (!started_ || last < next_sequence_ || last - next_sequence_ >= options_.max_sequence_jump ||
        loop_ahead_of_ >= next_sequence_) {
        return;
    }
    loop_ahead_of_ = last;
    loop_ahead_since_ns_ = now_ns;
}

std::uint64_t mdp3_channel::next_deadline() const noexcept {
    if (!started_ || loop_ahead_of_ < next_sequence_) {
        return 0; // none, or the packets came
    }
    return std::max(loop_ahead_since_ns_, last_packet_ns_) + options_.loop_ahead_ns;
}

void mdp3_channel::lose_packets_if_due(std::uint64_t now_ns) noexcept {
    // on_time() only: the caller's sequencing catches up right after it (the receiver's service
    // run), before another packet is delivered.
    std::uint64_t const due = next_deadline();
    if (due == 0 || now_ns < due) {
        return;
    }
    // Packets next_sequence_ to loop_ahead_of_ were sent and none came: lost on every line,
    // with no later packet to show it (the stream's tail). A gap like any other; the books the
    // loop recovers are as of loop_ahead_of_, so the events' sequence moves there.
    std::uint64_t const last = loop_ahead_of_;
    ++stats_.loop_revealed_gaps;
    on_discontinuity(now_ns);
    next_sequence_ = last + 1;
    applying_sequence_ = last;
    event_sequence_ = last;
    if (tracker_.stats().units != 0) { // on_incremental() sequences: the gap is its to count
        (void)tracker_.track(sequence_unit{.first = last + 1, .count = 0});
    }
    // The packets declared lost count as applied: a snapshot kept for one of them applies
    // now (as of `last`) or is too old; one further ahead waits, and shows packets sent.
    if (kept_first_ <= last) {
        apply_kept_snapshots(now_ns);
    }
    if (kept_first_ != none_kept) {
        note_loop_position(kept_first_, now_ns);
    }
    finish_recovery_if_done(now_ns);
}

void mdp3_channel::on_snapshot(std::span<std::byte const> packet, std::uint64_t now_ns) {
    if (!recovering_) {
        // Synchronized: the books are not the loop's to load, but where the loop stands shows
        // packets lost at the stream's tail.
        if (started_) {
            (void)for_each_message(packet, [&](message const& m) {
                if (m.schema_id != schema_id) {
                    return;
                }
                if (m.template_id == template_id::snapshot_full_refresh) {
                    if (auto const s = decode_snapshot_full_refresh(m)) {
                        note_loop_position(s->last_msg_seq_num_processed, now_ns);
                    }
                } else if (m.template_id == template_id::snapshot_order_book) {
                    if (auto const o = decode_snapshot_order_book(m)) {
                        note_loop_position(o->last_msg_seq_num_processed, now_ns);
                    }
                }
            });
        }
        return;
    }
    last_snapshot_ns_ = now_ns;
    packet_walk const walk = for_each_message(packet, [&](message const& m) {
        if (m.schema_id == schema_id && m.template_id == template_id::snapshot_order_book) {
            if (auto const o = decode_snapshot_order_book(m)) {
                load_order_snapshot(*o, now_ns);
            } else {
                ++stats_.malformed_messages;
            }
            return;
        }
        if (m.schema_id != schema_id || m.template_id != template_id::snapshot_full_refresh) {
            return;
        }
        auto const s = decode_snapshot_full_refresh(m);
        if (!s) {
            ++stats_.malformed_messages;
            return;
        }
        load_snapshot(m, *s, now_ns);
    });
    stats_.malformed_packets += walk.malformed ? 1 : 0;
    finish_recovery_if_done(now_ns);
}

void mdp3_channel::load_snapshot(message const& m, snapshot_full_refresh const& s,
                                 std::uint64_t now_ns) {
    note_loop_position(s.last_msg_seq_num_processed, now_ns);
    loop_size_ = s.tot_num_reports;
    mdp3_instrument* const i = lookup(s.security_id);
    if (i == nullptr) { // no definition yet: it still counts towards the loop
        if (std::find(seen_undefined_.begin(), seen_undefined_.end(), s.security_id) ==
            seen_undefined_.end()) {
            seen_undefined_.push_back(s.security_id);
            ++seen_in_loop_;
        }
        return;
    }
    if (i->seen_in_recovery != recovery_id_) {
        i->seen_in_recovery = recovery_id_;
        ++seen_in_loop_;
    }
    // The snapshot is valid as of incremental packet L. Until packet L is applied it is ahead
    // of the books: loading it would show a book the MsgSeqNum has not reached, and an RptSeq
    // ahead of the instrument's is no evidence of loss. Kept until packet L is applied.
    bool const confirms = !i->stale && s.rpt_seq <= i->rpt_seq;
    if (!confirms && std::uint64_t{s.last_msg_seq_num_processed} >= next_sequence_) {
        keep_snapshot(*i, m, s);
        return;
    }
    rebuild(*i, s, now_ns);
}

void mdp3_channel::rebuild(mdp3_instrument& i, snapshot_full_refresh const& s,
                           std::uint64_t now_ns) {
    if (!i.stale && s.rpt_seq <= i.rpt_seq) {
        ++stats_.snapshots_confirmed;
        return;
    }
    std::uint64_t const from = std::uint64_t{s.last_msg_seq_num_processed} + 1;
    if (!i.stale) { // as of L it had more than it has since: it lost entries (a MsgSeqNum gap)
        ++stats_.rpt_seq_gaps;
        make_stale(i, now_ns);
    }
    // The held packets must cover L + 1 on.
    if (from < next_sequence_ && (held_.empty() || from < held_.first_sequence())) {
        ++stats_.snapshots_too_old;
        return;
    }
    if (!i.book.assign_snapshot(s.entries)) {
        ++stats_.inconsistent_updates; // a snapshot that does not fit the depth: wait
        return;
    }
    i.rpt_seq = s.rpt_seq;
    i.statistics.assign(s);
    i.stale = false;
    ++stats_.snapshots_applied;
    if (sink_ != nullptr) {
        emit_loaded_book(i, now_ns);
    }
    replay_held(i, from, now_ns, replay::mbp);
    if (sink_ != nullptr) {
        emit(event_kind::instrument_recovered, i, now_ns);
    }
}

void mdp3_channel::keep_snapshot(mdp3_instrument& i, message const& m,
                                 snapshot_full_refresh const& s) {
    ++stats_.snapshots_ahead;
    std::uint64_t const as_of = s.last_msg_seq_num_processed;
    auto const k = static_cast<std::size_t>(&i - instruments_.data());
    kept_snapshot& slot = kept_[k];
    std::size_t const size = m.root.size() + m.groups.size();
    if (slot.as_of <= as_of || size > options_.kept_snapshot_bytes ||
        as_of - next_sequence_ >= options_.max_sequence_jump) {
        return; // an older one applies first; too large, or not believed: the next loop
    }
    std::byte* const to = kept_bytes_.data() + k * options_.kept_snapshot_bytes;
    std::copy(m.groups.begin(), m.groups.end(), std::copy(m.root.begin(), m.root.end(), to));
    slot = {.as_of = as_of,
            .block_length = m.block_length,
            .version = m.version,
            .size = static_cast<std::uint32_t>(size)};
    kept_first_ = std::min(kept_first_, as_of);
}

void mdp3_channel::apply_kept_snapshots(std::uint64_t now_ns) {
    // In definition order; each as if it had come right after the packet just applied (or
    // the packets declared lost): the events carry event_sequence_, past its L.
    std::uint64_t first = none_kept;
    for (std::size_t k = 0; k < kept_.size(); ++k) {
        mdp3_instrument& i = instruments_[k];
        kept_snapshot& slot = kept_[k];
        if (slot.as_of < next_sequence_) {
            std::span<std::byte const> const bytes(
                kept_bytes_.data() + k * options_.kept_snapshot_bytes, slot.size);
            message const m{.block_length = slot.block_length,
                            .template_id = template_id::snapshot_full_refresh,
                            .schema_id = schema_id,
                            .version = slot.version,
                            .root = bytes.first(slot.block_length),
                            .groups = bytes.subspan(slot.block_length)};
            slot.as_of = none_kept;
            if (auto const s = decode_snapshot_full_refresh(m)) {
                rebuild(i, *s, now_ns);
            }
        } else {
            first = std::min(first, slot.as_of);
        }
        if (i.orders_kept) {
            if (i.chunk_sequence < next_sequence_) {
                i.orders_kept = false;
                commit_order_snapshot(i, now_ns);
            } else {
                first = std::min(first, std::uint64_t{i.chunk_sequence});
            }
        }
    }
    kept_first_ = first;
}

void mdp3_channel::drop_kept_snapshots() noexcept {
    if (kept_first_ == none_kept) {
        return;
    }
    for (std::size_t k = 0; k < kept_.size(); ++k) {
        kept_[k].as_of = none_kept;
        if (instruments_[k].orders_kept) {
            instruments_[k].orders_kept = false;
            instruments_[k].orders.begin_load(); // frees the waiting load's orders
        }
    }
    kept_first_ = none_kept;
}

void mdp3_channel::replay_held(mdp3_instrument& i, std::uint64_t from, std::uint64_t now_ns,
                               replay kind) {
    // Their events carry event_sequence_ (the last packet applied), not the held packets' own.
    for (std::uint64_t seq = std::max(from, held_.first_sequence()); seq < held_.next_sequence();
         ++seq) {
        if (auto const p = held_.find(seq)) {
            applying_sequence_ = seq;
            (void)apply_packet(*p, now_ns, &i, kind);
        }
    }
    applying_sequence_ = event_sequence_;
}

void mdp3_channel::load_order_snapshot(snapshot_order_book const& s, std::uint64_t now_ns) {
    carries_orders_ = true;
    note_loop_position(s.last_msg_seq_num_processed, now_ns);
    order_loop_size_ = s.tot_num_reports;
    mdp3_instrument* const i = lookup(s.security_id);
    if (i == nullptr) {
        return;
    }
    if (s.current_chunk == s.no_chunks && i->orders_seen_in_recovery != recovery_id_) {
        i->orders_seen_in_recovery = recovery_id_; // its last chunk: the loop showed it
        ++order_seen_in_loop_;
    }
    if (!i->orders_stale || i->orders_kept) {
        return; // no RptSeq to compare: a book that is not stale is kept; or a load waits
    }
    if (s.current_chunk == 1) {
        i->orders.begin_load();
        i->next_chunk = 1;
        i->chunk_sequence = s.last_msg_seq_num_processed;
    }
    if (i->next_chunk == 0 || s.current_chunk != i->next_chunk ||
        s.last_msg_seq_num_processed != i->chunk_sequence) {
        i->next_chunk = 0; // a chunk missed: the next loop
        return;
    }
    bool fits = true;
    s.entries.for_each([&](snapshot_order_entry const& e) { fits = i->orders.add(e) && fits; });
    if (!fits) {
        ++stats_.order_budget_full;
        i->next_chunk = 0; // stays stale: another loop, when other books may have shrunk
        return;
    }
    ++i->next_chunk;
    if (s.current_chunk < s.no_chunks) {
        return;
    }
    i->next_chunk = 0;
    if (std::uint64_t{i->chunk_sequence} >= next_sequence_) {
        ++stats_.snapshots_ahead; // as load_snapshot(): kept, assembled, until its packet
        if (i->chunk_sequence - next_sequence_ < options_.max_sequence_jump) {
            i->orders_kept = true;
            kept_first_ = std::min(kept_first_, std::uint64_t{i->chunk_sequence});
        }
        return;
    }
    commit_order_snapshot(*i, now_ns);
}

void mdp3_channel::commit_order_snapshot(mdp3_instrument& i, std::uint64_t now_ns) {
    std::uint64_t const from = std::uint64_t{i.chunk_sequence} + 1;
    if (!i.orders_stale) {
        i.orders.begin_load(); // cleared meanwhile (a whole loop without it): kept as it is
        return;
    }
    if (from < next_sequence_ && (held_.empty() || from < held_.first_sequence())) {
        ++stats_.snapshots_too_old;
        return;
    }
    i.orders.commit_load();
    i.orders_stale = false;
    i.orders_as_of = i.chunk_sequence;
    ++stats_.order_snapshots_applied;
    if (sink_ != nullptr) {
        emit_loaded_book(i, now_ns);
    }
    replay_held(i, from, now_ns, replay::mbo);
}

void mdp3_channel::finish_recovery_if_done(std::uint64_t now_ns) noexcept {
    if (loop_size_ == 0 || seen_in_loop_ < loop_size_) {
        return;
    }
    for (mdp3_instrument& i : instruments_) {
        if (i.stale && i.seen_in_recovery != recovery_id_) {
            // A whole loop without it: no book activity this week, so an empty book is right.
            i.book.clear();
            i.rpt_seq = 0;
            i.stale = false;
            if (sink_ != nullptr) {
                emit(event_kind::book_clear, i, now_ns);
                emit(event_kind::instrument_recovered, i, now_ns);
            }
        }
        if (i.stale) {
            return; // its snapshot was too old: the next loop
        }
    }
    if (carries_orders_ && (order_loop_size_ == 0 || order_seen_in_loop_ < order_loop_size_)) {
        return; // the MBO books wait for a whole loop of theirs too
    }
    for (mdp3_instrument& i : instruments_) {
        if (i.orders_stale && (!carries_orders_ || i.orders_seen_in_recovery != recovery_id_)) {
            i.orders.clear(); // no orders on the channel, or none for it in a whole loop
            i.orders_stale = false;
        }
        if (i.orders_stale) {
            return;
        }
    }
    recovering_ = false;
    held_.clear();
    drop_kept_snapshots(); // of instruments not stale: they could only confirm
    ++stats_.recoveries_completed;
    stats_.last_recovery_ns = now_ns > recovery_started_ns_ ? now_ns - recovery_started_ns_ : 0;
    stats_.recovery_ns += stats_.last_recovery_ns;
}

void mdp3_channel::apply_status(mdp3_instrument& i, security_status const& s,
                                std::uint64_t now_ns) noexcept {
    constexpr std::uint8_t no_change = 103; // SecurityTradingStatus NoChange
    if (s.trading_status == no_change || s.trading_status == null_uint8) {
        return;
    }
    i.trading_status = s.trading_status;
    if (sink_ != nullptr) {
        transact_time_ = s.transact_time;
        emit_status(i, s.trading_status, now_ns);
    }
}

void mdp3_channel::on_time(std::uint64_t now_ns) noexcept {
    if (recovering_ && now_ns > last_snapshot_ns_ + options_.snapshot_silence_ns) {
        ++stats_.snapshot_silences;
        last_snapshot_ns_ = now_ns;
    }
    lose_packets_if_due(now_ns);
}

void mdp3_channel::reset_channel() noexcept {
    ++stats_.channel_resets;
    if (wants(event_kind::book_clear)) {
        sink_->on_event(marker_event(event_kind::book_clear, all_instruments,
                                     {.sequence = event_sequence_, .receive_ns = 0}));
    }
    for (mdp3_instrument& i : instruments_) {
        i.book.clear();
        i.rpt_seq = 0;
        i.statistics = {};
        i.stale = false;
        i.orders.clear();
        i.orders_stale = false;
        i.next_chunk = 0;
        i.orders_as_of = 0;
    }
    drop_kept_snapshots();
    recovering_ = false;
    held_.clear();
}

namespace {

/// A statistic under MDUpdateAction: delete makes it null again, anything else sets it.
template <typename T>
void set(T& field, update_action action, T value, T null) noexcept {
    field = action == update_action::remove ? null : value;
}

} // namespace

void mdp3_statistics::apply(volume_entry const& e) noexcept {
    set(volume, e.action, e.size, null_int32);
}

void mdp3_statistics::apply(daily_statistics_entry const& e) noexcept {
    switch (e.type) {
    case entry_type::settlement_price:
        set(settlement_price, e.action, e.price, null_price);
        break;
    case entry_type::cleared_volume:
        set(cleared_volume, e.action, e.size, null_int32);
        break;
    case entry_type::open_interest:
        set(open_interest, e.action, e.size, null_int32);
        break;
    case entry_type::fixing_price:
        set(fixing_price, e.action, e.price, null_price);
        break;
    default:
        break;
    }
}

void mdp3_statistics::apply(limits_banding_entry const& e) noexcept {
    // A limit is deleted by sending it null (the schema's note on MDUpdateActionNew).
    high_limit_price = e.high_limit_price;
    low_limit_price = e.low_limit_price;
    max_price_variation = e.max_price_variation;
}

void mdp3_statistics::apply(session_statistics_entry const& e) noexcept {
    switch (e.type) {
    case entry_type::open_price:
        set(open_price, e.action, e.price, null_price);
        break;
    case entry_type::trading_session_high:
        set(session_high_trade, e.action, e.price, null_price);
        break;
    case entry_type::trading_session_low:
        set(session_low_trade, e.action, e.price, null_price);
        break;
    case entry_type::session_high_bid:
        set(session_high_bid, e.action, e.price, null_price);
        break;
    case entry_type::session_low_offer:
        set(session_low_offer, e.action, e.price, null_price);
        break;
    default:
        break;
    }
}

void mdp3_statistics::assign(snapshot_full_refresh const& s) noexcept {
    mdp3_statistics fresh;
    fresh.volume = volume; // not in the snapshot: the next 37 brings it
    fresh.high_limit_price = s.high_limit_price;
    fresh.low_limit_price = s.low_limit_price;
    fresh.max_price_variation = s.max_price_variation;
    s.entries.for_each([&](snapshot_entry const& e) {
        switch (e.type) {
        case entry_type::settlement_price:
            fresh.settlement_price = e.price;
            break;
        case entry_type::open_price:
            fresh.open_price = e.price;
            break;
        case entry_type::trading_session_high:
            fresh.session_high_trade = e.price;
            break;
        case entry_type::trading_session_low:
            fresh.session_low_trade = e.price;
            break;
        case entry_type::session_high_bid:
            fresh.session_high_bid = e.price;
            break;
        case entry_type::session_low_offer:
            fresh.session_low_offer = e.price;
            break;
        case entry_type::cleared_volume:
            fresh.cleared_volume = e.size;
            break;
        case entry_type::open_interest:
            fresh.open_interest = e.size;
            break;
        case entry_type::fixing_price:
            fresh.fixing_price = e.price;
            break;
        case entry_type::electronic_volume:
            fresh.volume = e.size;
            break;
        default:
            break;
        }
    });
    *this = fresh;
}

} // namespace signet::md::cme
