"""stats.py: INFO's counters, unit-tested without a server (the e2e side is test_info.py)."""

from ferrumkv_py import server as server_mod
from ferrumkv_py.registry import lookup
from ferrumkv_py.stats import STATS_METRIC_SAMPLES, Stats

GET = lookup(b"get")
SET = lookup(b"set")


def test_server_uses_the_stats_module():
    # one home: the server builds its counters from stats.py and defines no copy of its own
    assert server_mod.Stats is Stats
    assert "class Stats" not in open(server_mod.__file__, encoding="utf-8").read()


def test_flush_counts_a_batch_of_one_kind_and_its_time():
    st = Stats()
    st.pending.extend([GET] * 16)
    st.flush(1600)
    assert st.cmd[GET][:2] == [16, 1600]
    assert st.total_commands == 16
    assert st.pending == []


def test_flush_shares_the_time_of_a_mixed_batch():
    st = Stats()
    st.pending.extend([GET, SET, GET, SET])
    st.flush(400)
    assert st.cmd[GET][:2] == [2, 200]
    assert st.cmd[SET][:2] == [2, 200]
    assert st.total_commands == 4


def test_reading_cmd_or_total_flushes_pending_calls():
    st = Stats()
    st.pending.append(GET)
    assert st.total_commands == 1       # the pending call is counted on read
    st.pending.append(SET)
    assert st.cmd[SET][0] == 1
    assert st.pending == []


def test_failed_rejected_and_error_counts():
    st = Stats()
    st.count_call(SET, 5, failed=True)
    st.count_rejected(SET)
    st.count_error("WRONGTYPE")
    st.count_error("WRONGTYPE")
    assert st.cmd[SET] == [1, 5, 1, 1]
    assert st.errors == {"WRONGTYPE": 2}
    assert st.total_error_replies == 2
    assert st.total_commands == 1


def test_reset_keeps_the_pending_list_object():
    # the dispatcher binds stats.pending.append once per client: reset must not replace it
    st = Stats()
    pending = st.pending
    st.pending.append(GET)
    st.count_error("ERR")
    st.note_memory(100)
    st.reset()
    assert st.pending is pending and pending == []
    assert st.errors == {} and st.total_commands == 0 and st.peak_memory == 0


def test_ops_samples_average_over_the_window():
    st = Stats()
    st.sample_ops(1000)                 # the first sample only sets the start
    assert st.instantaneous_ops() == 0
    st.pending.extend([GET] * 50)
    st.sample_ops(1100)                 # 50 commands in 100 ms: 500/s
    assert st.ops_samples[0] == 500
    assert st.instantaneous_ops() == 500 // STATS_METRIC_SAMPLES


def test_note_memory_keeps_the_peak():
    st = Stats()
    assert st.note_memory(10) == 10
    assert st.note_memory(5) == 10
    assert st.peak_memory == 10
