#include <algorithm>

#include <signet/md/mdp3_channel.hpp>

namespace signet::md::mdp3 {

channel::channel(channel_options const& options)
    : options_(options)
    , held_(options.held_packets, options.held_bytes) {}

instrument* channel::lookup(std::int32_t security_id) noexcept {
    auto const it = index_.find(security_id);
    return it == index_.end() ? nullptr : &instruments_[it->second];
}

instrument const* channel::find(std::int32_t security_id) const noexcept {
    auto const it = index_.find(security_id);
    return it == index_.end() ? nullptr : &instruments_[it->second];
}

void channel::on_definition(std::span<std::byte const> packet, std::uint64_t now_ns) {
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
        instrument i{.security_id = d->security_id,
                     .symbol = d->symbol,
                     .tick = d->min_price_increment,
                     .display_factor = d->display_factor,
                     .trading_status = d->trading_status,
                     .book = price_book(depth > 0 ? static_cast<std::size_t>(depth) : 10)};
        index_.emplace(d->security_id, instruments_.size());
        instruments_.push_back(i);
        if (started_) {
            make_stale(instruments_.back(), now_ns); // its book missed what came before
        }
    });
    stats_.malformed_packets += walk.malformed ? 1 : 0;
}

void channel::on_incremental(std::span<std::byte const> packet, std::uint64_t now_ns) {
    ++stats_.packets;
    std::optional<packet_header> const header = read_packet_header(packet);
    if (!header) {
        ++stats_.malformed_packets;
        return;
    }
    std::uint64_t const sequence = header->sequence;
    if (next_sequence_ != 0 && sequence < next_sequence_) {
        ++stats_.duplicate_packets;
        return;
    }
    if (next_sequence_ == 0 ? sequence != 1 : sequence > next_sequence_) {
        // A late start, or packets lost: any instrument may have missed data.
        if (next_sequence_ != 0) {
            ++stats_.gaps;
        } else {
            for (instrument& i : instruments_) {
                make_stale(i, now_ns); // joined mid-session: every book needs its snapshot
            }
        }
        start_recovery(now_ns);
        held_.clear(); // the store holds consecutive packets from here on
    }
    next_sequence_ = sequence + 1;
    started_ = true;
    if (recovering_) {
        std::uint64_t const evicted = held_.evicted();
        if (!held_.append(sequence, packet)) {
            held_.clear();
            (void)held_.append(sequence, packet);
        }
        stats_.held_evicted += held_.evicted() - evicted;
    }
    apply_packet(packet, now_ns, nullptr);
}

void channel::apply_packet(std::span<std::byte const> packet, std::uint64_t now_ns,
                           instrument* only) {
    packet_walk const walk = for_each_message(packet, [&](message const& m) {
        if (m.schema_id != schema_id) {
            ++stats_.unknown_messages;
            return;
        }
        switch (m.template_id) {
        case template_id::incremental_book: {
            auto const b = decode_incremental_book(m);
            if (!b) {
                ++stats_.malformed_messages;
                return;
            }
            b->entries.for_each([&](book_entry const& e) {
                instrument* const i = lookup(e.security_id);
                if (i == nullptr) {
                    stats_.unknown_instrument_entries += only == nullptr ? 1 : 0;
                    return;
                }
                if ((only != nullptr && i != only) || (only == nullptr && i->stale) ||
                    !next_in_sequence(*i, e.rpt_seq, now_ns)) {
                    return;
                }
                if (i->book.apply(e) == book_update::inconsistent) {
                    ++stats_.inconsistent_updates;
                    make_stale(*i, now_ns);
                    return;
                }
                ++(only != nullptr ? stats_.replayed_entries : stats_.book_entries);
            });
            return;
        }
        case template_id::incremental_trade_summary: {
            auto const t = decode_incremental_trade_summary(m);
            if (!t) {
                ++stats_.malformed_messages;
                return;
            }
            t->entries.for_each([&](trade_entry const& e) { // RptSeq only: no book change
                instrument* const i = lookup(e.security_id);
                if (i != nullptr && (only == nullptr ? !i->stale : i == only)) {
                    (void)next_in_sequence(*i, e.rpt_seq, now_ns);
                }
            });
            return;
        }
        case template_id::security_status:
            if (only == nullptr) {
                if (auto const s = decode_security_status(m); !s) {
                    ++stats_.malformed_messages;
                } else if (instrument* const i = lookup(s->security_id)) {
                    i->trading_status = s->trading_status;
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
}

bool channel::next_in_sequence(instrument& i, std::uint32_t rpt_seq,
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

void channel::make_stale(instrument& i, std::uint64_t now_ns) noexcept {
    i.stale = true;
    start_recovery(now_ns);
}

void channel::start_recovery(std::uint64_t now_ns) noexcept {
    if (recovering_) {
        return;
    }
    recovering_ = true;
    ++stats_.recoveries;
    ++recovery_id_;
    seen_in_loop_ = 0;
    loop_size_ = 0;
    seen_undefined_.clear();
    last_snapshot_ns_ = now_ns;
    recovery_started_ns_ = now_ns;
}

void channel::on_snapshot(std::span<std::byte const> packet, std::uint64_t now_ns) {
    if (!recovering_) {
        return; // synchronized: the loop is not ours to read
    }
    last_snapshot_ns_ = now_ns;
    packet_walk const walk = for_each_message(packet, [&](message const& m) {
        if (m.schema_id != schema_id || m.template_id != template_id::snapshot_full_refresh) {
            return; // MBO snapshots (53) and others
        }
        auto const s = decode_snapshot_full_refresh(m);
        if (!s) {
            ++stats_.malformed_messages;
            return;
        }
        load_snapshot(*s, now_ns);
    });
    stats_.malformed_packets += walk.malformed ? 1 : 0;
    finish_recovery_if_done(now_ns);
}

void channel::load_snapshot(snapshot_full_refresh const& s, std::uint64_t now_ns) {
    loop_size_ = s.tot_num_reports;
    instrument* const i = lookup(s.security_id);
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
    if (!i->stale && s.rpt_seq <= i->rpt_seq) {
        ++stats_.snapshots_confirmed;
        return;
    }
    // The snapshot is valid as of incremental packet L: the held packets must cover L + 1 on.
    std::uint64_t const from = std::uint64_t{s.last_msg_seq_num_processed} + 1;
    bool const covered =
        from >= next_sequence_ || (!held_.empty() && from >= held_.first_sequence());
    if (!covered) {
        ++stats_.snapshots_too_old;
        return;
    }
    if (!i->book.load(s.entries)) {
        ++stats_.inconsistent_updates; // a snapshot that does not fit the depth: wait
        return;
    }
    i->rpt_seq = s.rpt_seq;
    i->stale = false;
    ++stats_.snapshots_applied;
    for (std::uint64_t seq = std::max(from, held_.first_sequence()); seq < held_.next_sequence();
         ++seq) {
        if (auto const p = held_.find(seq)) {
            apply_packet(*p, now_ns, i);
        }
    }
}

void channel::finish_recovery_if_done(std::uint64_t now_ns) noexcept {
    if (loop_size_ == 0 || seen_in_loop_ < loop_size_) {
        return;
    }
    for (instrument& i : instruments_) {
        if (i.stale && i.seen_in_recovery != recovery_id_) {
            // A whole loop without it: no book activity this week, so an empty book is right.
            i.book.clear();
            i.rpt_seq = 0;
            i.stale = false;
        }
        if (i.stale) {
            return; // its snapshot was too old: the next loop
        }
    }
    recovering_ = false;
    held_.clear();
    ++stats_.recoveries_completed;
    stats_.last_recovery_ns = now_ns > recovery_started_ns_ ? now_ns - recovery_started_ns_ : 0;
    stats_.recovery_ns += stats_.last_recovery_ns;
}

void channel::on_time(std::uint64_t now_ns) noexcept {
    if (recovering_ && now_ns > last_snapshot_ns_ + options_.snapshot_silence_ns) {
        ++stats_.snapshot_silences;
        last_snapshot_ns_ = now_ns;
    }
}

void channel::reset_channel() noexcept {
    ++stats_.channel_resets;
    for (instrument& i : instruments_) {
        i.book.clear();
        i.rpt_seq = 0;
        i.stale = false;
    }
    recovering_ = false;
    held_.clear();
}

} // namespace signet::md::mdp3
