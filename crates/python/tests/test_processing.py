"""Processing: MetricProcessor over the caller's dict, against the golden data."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from nixl_telemetry import MetricProcessor, ProcessingError

from conftest import TAO_DATA

CONFIGS = {
    "default": None,
    "legacy": ["legacy"],
    "comprehensive": ["comprehensive"],
    "time": ["time"],
    "labeled": ["labeled"],
}


def corpus():
    lines = (TAO_DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    return [(json.loads(line)["record"], datetime.fromisoformat(json.loads(line)["now"]))
            for line in lines]


def expected(name):
    return json.loads((TAO_DATA / ("expected_%s.json" % name)).read_text(encoding="utf-8"))


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_corpus_one_by_one_and_in_one_batch(config):
    items = corpus()
    one_by_one = {}
    p = MetricProcessor(builders=CONFIGS[config])
    for record, now in items:
        assert p.process(one_by_one, record, {"now": now}) is one_by_one
    assert one_by_one == expected(config)
    batch = {}
    assert MetricProcessor(builders=CONFIGS[config]).process_many(batch, items) is batch
    assert batch == expected(config)


def test_process_many_takes_dicts_pairs_and_a_shared_context():
    now = datetime(2025, 3, 1, 12, 0, 0)
    a = MetricProcessor().process_many({}, [{"action": "train"}, ({"action": "x"}, now),
                                            ({"action": "y"}, {"now": now})], {"now": now})
    b = {}
    p = MetricProcessor()
    for r in [{"action": "train"}, {"action": "x"}, {"action": "y"}]:
        p.process(b, r, {"now": now})
    assert a == b and a["last_updated"] == "2025-03-01T12:00:00"


def test_context_now_and_old_now():
    p = MetricProcessor(builders="time")
    m = {}
    p.process(m, {"time_lapsed": 5}, {"now": datetime(2025, 1, 15, 10)})
    p.process(m, {"time_lapsed": 7}, {"now": datetime(2025, 2, 15, 10)})  # calendar date
    assert m["time_lapsed_today"] == 7
    p.process(m, {"time_lapsed": 1}, {"now": datetime(2025, 2, 15, 11),
                                      "old_now": datetime(2025, 2, 14)})
    assert m["time_lapsed_today"] == 1
    p.process(m, {"time_lapsed": 2})  # now = the local time
    assert "last_updated" in m
    aware = datetime(2025, 1, 1, 0, 0, 0, 5, tzinfo=timezone(timedelta(hours=2)))
    p.process(m, {}, {"now": aware})
    assert m["last_updated"] == aware.isoformat()


def test_metrics_from_earlier_runs_are_continued():
    m = {"total_action_train_pass": 41, "last_updated": "2025-01-13T10:00:00",
         "time_lapsed_today": 100, "other": "kept", 3: "non-str key kept"}
    MetricProcessor().process(m, {"action": "train", "success": True, "time_lapsed": 5},
                              {"now": datetime(2025, 1, 13, 11)})
    assert m["total_action_train_pass"] == 42 and m["time_lapsed_today"] == 105
    assert m["other"] == "kept" and m[3] == "non-str key kept"
    assert m["last_updated"] == "2025-01-13T11:00:00"


@pytest.mark.parametrize(
    "record, needles",
    [
        ({"time_lapsed": "10"}, ["time_lapsed", "integer", "string"]),
        ({"time_lapsed": 1.5}, ["time_lapsed", "integer"]),
        ({"time_lapsed": True}, ["time_lapsed", "integer"]),
        ({"time_lapsed": 1 << 70}, ["time_lapsed"]),
        ({"gpu": "A100"}, ["gpu", "list"]),
        ({"gpu": ["A100", 3]}, ["gpu", "element 1"]),
        ({"action": ["train"]}, ["action", "string"]),
        ({"success": {"a": 1}}, ["success"]),
        ({"network": object()}, ["network", "object"]),
        ({"network": float("nan")}, ["network", "finite"]),
        ({"time_lapsed": 2**63 - 1}, ["overflow"]),
    ],
)
def test_errors_name_the_key_and_leave_the_dict_unchanged(record, needles):
    p = MetricProcessor()
    m = {}
    p.process(m, {"time_lapsed": 10, "action": "train"}, {"now": datetime(2025, 1, 1)})
    before = dict(m)
    with pytest.raises(ProcessingError) as info:
        p.process(m, record, {"now": datetime(2025, 1, 1, 1)})
    assert m == before and list(m) == list(before)
    for needle in needles:
        assert needle in str(info.value), str(info.value)
    assert isinstance(info.value, ValueError)


def _self_containing_list():
    value = ["a"]
    value.append(value)
    return value


def _self_containing_dict():
    value = {"a": 1}
    value["me"] = value
    return value


def _nested(levels):
    value = "leaf"
    for i in range(levels):
        value = [value] if i % 2 else {"k": value}
    return value


@pytest.mark.parametrize(
    "make",
    [_self_containing_list, _self_containing_dict, lambda: _nested(200)],
    ids=["list-in-itself", "dict-in-itself", "200-levels"],
)
def test_values_nested_past_the_limit_are_refused_not_a_crash(make):
    m = {"x": 1}
    record = {"time_lapsed": 10, "payload": make()}
    for run in (
        lambda: MetricProcessor().process(m, record, {"now": datetime(2025, 1, 1)}),
        lambda: MetricProcessor().process_many(m, [{}, record]),
    ):
        with pytest.raises(ProcessingError, match="nested more than 128 levels") as info:
            run()
        assert "key `payload`" in str(info.value)
        assert m == {"x": 1}


def test_values_nested_up_to_the_limit_are_read():
    m = {}
    MetricProcessor().process(m, {"time_lapsed": 10, "payload": _nested(127)},
                              {"now": datetime(2025, 1, 1)})
    assert m


def test_a_bad_record_in_a_batch_applies_none():
    m = {"x": 1}
    with pytest.raises(ProcessingError, match="record #2"):
        MetricProcessor().process_many(m, [{}, {}, {"time_lapsed": "x"}, {}])
    assert m == {"x": 1}
    with pytest.raises(ProcessingError, match="record #0: the record must be a dict"):
        MetricProcessor().process_many(m, [[1, 2]])
    with pytest.raises(ProcessingError, match="record #1: .*datetime"):
        MetricProcessor().process_many(m, [{}, ({}, "2025-01-01")])


@pytest.mark.parametrize(
    "metrics, needle",
    [
        ({"total_action_unknown_fail": 1.5}, "non-int"),
        ({"total_action_unknown_fail": 1 << 64}, "64-bit"),
        ({"last_updated": 5}, "last_updated"),
        ({"last_updated": "yesterday"}, "last_updated"),
        ({"total_action_unknown_fail": 2**63 - 1}, "overflow"),
    ],
)
def test_bad_metrics_values(metrics, needle):
    m = dict(metrics)
    with pytest.raises(ProcessingError, match=needle):
        MetricProcessor().process(m, {}, None)
    assert m == metrics


def test_bad_arguments():
    with pytest.raises(ProcessingError, match="unknown builder `nope`"):
        MetricProcessor(builders=["legacy", "nope"])
    with pytest.raises(ProcessingError, match="context must be a dict"):
        MetricProcessor().process({}, {}, 5)
    with pytest.raises(ProcessingError, match=r"context\['now'\] must be a datetime"):
        MetricProcessor().process({}, {}, {"now": "2025-01-01"})
    with pytest.raises(TypeError):
        MetricProcessor().process([], {})
    with pytest.raises(ProcessingError, match="attributes"):
        MetricProcessor(attributes={"attributes": [{"name": "x", "type": "nope", "default": 1}]})
    with pytest.raises(ProcessingError, match="attributes"):
        MetricProcessor(attributes=5)


def test_builders_and_attribute_registry(tmp_path):
    assert MetricProcessor().builder_names == ["legacy", "comprehensive", "time", "labeled"]
    assert MetricProcessor(builders="legacy, time").builder_names == ["legacy", "time"]
    assert MetricProcessor(builders=[]).process({}, {}, {"now": datetime(2025, 1, 1)}) == {
        "last_updated": "2025-01-01T00:00:00"}
    doc = {"include_defaults": True, "attributes": [
        {"name": "framework", "type": "string", "default": "pytorch", "metric_order": 7}]}
    m = MetricProcessor(builders=["comprehensive"], attributes=doc).process(
        {}, {"action": "train", "framework": "JAX"}, {"now": datetime(2025, 1, 1)})
    assert ("network_unknown_action_train_version_unknown_status_fail_framework_jax_gpu_1_UNKNOWN_1"
            in m)
    path = tmp_path / "registry.json"
    path.write_text(json.dumps(doc))
    assert MetricProcessor(builders=["comprehensive"], attributes=str(path)).process(
        {}, {"action": "train", "framework": "JAX"}, {"now": datetime(2025, 1, 1)}) == m


def test_to_prometheus():
    p = MetricProcessor()
    m = p.process_many({}, corpus()[:20])
    text = p.to_prometheus(m)
    assert text.startswith("# last_updated %s\n" % m["last_updated"])
    assert "# TYPE time_lapsed_today gauge\n" in text
    assert "# TYPE tao_job_total counter\n" in text
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    assert len(samples) == len(m) - 1
    with pytest.raises(ProcessingError, match="not a valid Prometheus series"):
        p.to_prometheus({"bad key": 1})


def test_one_processor_from_many_threads():
    import threading

    items = corpus()
    p = MetricProcessor()
    results = [None] * 4
    errors = []

    def work(i):
        try:
            m = {}
            for record, now in items[:100]:
                p.process(m, record, {"now": now})
            p.process_many(m, items[100:])
            results[i] = m
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert all(r == expected("default") for r in results)


def test_process_many_sees_caller_changes_between_batches():
    """A processor keeps its map between batches of one dict; every change the
    caller makes in between (a value, a removed key, a new non-int value under a
    key a builder writes) is seen, as a fresh processor would see it."""
    items = corpus()
    first, second, third = items[:100], items[100:200], items[200:]

    def both(change, batch):
        kept = MetricProcessor()
        ours = {}
        kept.process_many(ours, first)
        reference = dict(ours)
        change(ours)
        change(reference)
        kept.process_many(ours, batch)
        fresh = MetricProcessor()
        fresh.process_many(reference, batch)
        assert ours == reference

    key = "total_action_train_pass"
    both(lambda m: m.__setitem__(key, m.get(key, 0) + 1000), second)
    both(lambda m: m.pop(key, None), second)
    both(lambda m: m.__setitem__(key, True), third)  # bool: an int to the processor
    both(lambda m: m.update({k: 0 for k in list(m) if k != "last_updated"}), third)
    both(lambda m: m.pop("last_updated"), third)

    kept, m = MetricProcessor(), {}
    kept.process_many(m, first)
    m["total_action_newaction_pass"] = "not an int"
    before = dict(m)
    with pytest.raises(ProcessingError, match="total_action_newaction_pass.*non-int"):
        kept.process_many(m, [({"action": "newaction", "success": True}, first[-1][1])])
    assert m == before and list(m) == list(before)
    del m["total_action_newaction_pass"]
    kept.process_many(m, [({"action": "newaction", "success": True}, first[-1][1])])
    assert m["total_action_newaction_pass"] == 1


def test_process_many_text_of_every_kind():
    """Non-ASCII text, str subclasses and strings made for the call only give
    the same metrics as plain literals."""
    class Tagged(str):
        pass

    now = datetime(2025, 5, 1, 8)
    plain = [{"action": "tr\u00e4in", "network": "r\u00e9snet \u7f51", "gpu": ["H100 \U0001f680"],
              "version": "6.0", "success": True}] * 3
    made = [{Tagged("action"): Tagged("tr\u00e4in"), "network": "".join(["r\u00e9s", "net \u7f51"]),
             "gpu": (Tagged("H100 \U0001f680"),), "version": str(6.0), "success": 1 == 1}
            for _ in range(3)]
    a = MetricProcessor().process_many({}, plain, {"now": now})
    b = MetricProcessor().process_many({}, (r for r in made), {"now": now})
    assert a == b and any("r_snet" in k for k in a), sorted(a)


def test_datetimes_of_every_kind_are_read_exactly():
    """`now` is read field by field from naive datetimes (subclasses too) and
    through isoformat from aware ones: all agree with isoformat."""
    class Stamped(datetime):
        pass

    plain = [datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59, 999999),
             datetime(2025, 1, 13, 3, 32, 21, 166259), datetime(2024, 2, 29, 0, 0, 0, 1),
             datetime(2025, 11, 2, 1, 30, fold=1)]
    for now in plain + [Stamped(2025, 6, 1, 12, 0, 0, 5),
                        datetime(2025, 6, 1, 12, tzinfo=timezone(timedelta(hours=-3)))]:
        m = MetricProcessor().process_many({}, [({}, now)])
        assert m["last_updated"] == now.isoformat(), now


def test_process_many_reads_lists_and_other_inputs_alike():
    """A list of plain records and the same items as an iterator, with odd
    items anywhere (subclasses, values of other types, dict contexts), give
    the same metrics and the same errors, and the dict is left unchanged on an
    error."""
    class Tagged(str):
        pass

    class Count(int):
        pass

    class Stamped(datetime):
        pass

    now = datetime(2025, 4, 2, 9, 30)
    plain = corpus()[:40]
    odd_items = [
        ({"action": "train", "time_lapsed": Count(7)}, now),
        ({Tagged("action"): "train"}, now),
        ({"action": "train", 5: "not a key"}, now),
        ({"action": "train", "gpu": ("A100", "A100")}, now),
        ({"action": "train", "success": 1.5, "user_error": -3}, now),
        ({"action": "train", "version": 2 ** 63 + 5, "network": -(2 ** 63)}, now),
        ({"action": "train", "version": 2 ** 70, "network": 1e300}, now),
        ({"action": "train", "version": None, "success": "yes"}, now),
        ({"action": "train", "gpu": ["A100", "H100"]}, None),
        ({"action": "train", "extra": {"nested": [1, {"x": 2}]}}, now),
        ({"action": "train"}, {"now": now}),
        ({"action": "train"}, Stamped(2025, 4, 2, 10)),
        ({"action": "train"}, datetime(2025, 4, 2, 11, tzinfo=timezone.utc)),
        {"action": "shared context"},
    ]
    # One processor and one dict through every batch below too.
    service, service_m = MetricProcessor(), {}
    service_ref, service_ref_m = MetricProcessor(), {}
    for odd in odd_items:
        # A `None` context means "now" (the clock): never last, where it would
        # give `last_updated`.
        positions = (0, 20) if isinstance(odd, tuple) and odd[1] is None else (0, 20, 40)
        for position in positions:
            items = plain[:position] + [odd] + plain[position:]
            shared = {"now": now}
            listed = MetricProcessor().process_many({}, items, shared)
            iterated = MetricProcessor().process_many({}, iter(items), shared)
            assert listed == iterated, odd
            if positions[-1] == 40:
                for batch in (items[:position], items[position:], plain[::-1]):
                    service.process_many(service_m, batch, shared)
                    service_ref.process_many(service_ref_m, iter(batch), shared)
                    assert service_m == service_ref_m, odd
            # One processor, one dict, batch after batch: as in a service.
            p, m, reference = MetricProcessor(), {}, {}
            for _ in range(2):
                p.process_many(m, items, shared)
                MetricProcessor().process_many(reference, iter(items), shared)
                assert m == reference, odd

    bad_items = [
        ({"time_lapsed": "x"}, now),
        ({"action": float("nan")}, now),
        ({"action": object()}, now),
        ({"gpu": ["A100", ["nested"]]}, now),
        ({"gpu": ["A100", None]}, now),
        ({"gpu": "A100"}, now),
        ({"action": "\udc80"}, now),
        ({"action": "train"}, "2025-01-01"),
        ({"action": "train"},),
        [("action", "train")],
    ]
    for bad in bad_items:
        for position in (0, 20, 40):
            items = plain[:position] + [bad] + plain[position:]
            p, m = MetricProcessor(), {}
            p.process_many(m, plain)
            before = dict(m)
            with pytest.raises(ProcessingError) as listed:
                p.process_many(m, items)
            assert m == before and list(m) == list(before), bad
            with pytest.raises(ProcessingError) as iterated:
                MetricProcessor().process_many(dict(before), iter(items))
            assert str(listed.value) == str(iterated.value), bad
            # The processor goes on from the unchanged dict.
            p.process_many(m, plain)
            reference = MetricProcessor().process_many(dict(before), iter(plain))
            assert m == reference, bad


class _OwnHash(str):
    """A str subclass with its own hash: a dict holds it beside the plain str
    of the same text as two keys."""

    def __hash__(self):
        return hash(("own", str(self)))

    def __eq__(self, other):
        return type(other) is _OwnHash and str.__eq__(self, other)

    __ne__ = lambda self, other: not self.__eq__(other)  # noqa: E731


def test_keys_of_the_same_text_are_told_apart_as_the_reference_does():
    """A plain-str key and a str-subclass key with its own hash and the same
    text: the processors read and write the metric under the plain key (a
    lookup by the metric's text), never under the other one, one record at a
    time and in a batch."""
    from nvidia_tao_core.telemetry.processor import MetricProcessor as Reference

    now = datetime(2025, 1, 13, 10)
    record = {"action": "train", "success": True}

    def fresh():
        return {"aaa": 7, _OwnHash("aaa"): 8, "total_action_train_pass": 100}

    reference = Reference(builders=[]).process(fresh(), record, {"now": now})
    single = MetricProcessor(builders=[]).process(fresh(), record, {"now": now})
    assert single == reference
    for builders in ([], ["legacy"], None):
        single = MetricProcessor(builders).process(fresh(), record, {"now": now})
        batch = MetricProcessor(builders).process_many(fresh(), [(record, now)])
        assert batch == single, builders
        assert batch["total_action_train_pass"] == (101 if builders != [] else 100)
        assert batch["aaa"] == 7 and batch[_OwnHash("aaa")] == 8, builders
    # The subclass key alone is found by a plain lookup when it hashes and
    # compares as a str does: it is then the metric's key, as in the reference.
    class Tagged(str):
        pass

    m = {Tagged("total_action_train_pass"): 5}
    ref = Reference(builders=None).process(
        {Tagged("total_action_train_pass"): 5}, record, {"now": now})
    MetricProcessor().process_many(m, [(record, now)])
    assert m == ref and m["total_action_train_pass"] == 6
    assert [type(k) for k in m if k == "total_action_train_pass"] == [Tagged]


class _RaisingKey:
    """A dict key that hashes like a str the processor writes and whose
    comparison raises: the write of that str into the dict fails."""

    def __init__(self, like):
        self.like = like

    def __hash__(self):
        return hash(self.like)

    def __eq__(self, other):
        raise RuntimeError("comparison refused")


@pytest.mark.parametrize("batch", [False, True], ids=["process", "process_many"])
def test_a_failed_write_back_leaves_the_dict_unchanged(batch):
    """The write-back into the caller's dict fails half-way (a key whose
    `__eq__` raises collides with `last_updated`, written last): every value
    already written is put back, the dict is as before, and the error is a
    ProcessingError naming the key."""
    now = datetime(2025, 1, 13, 10)
    m = {_RaisingKey("last_updated"): "hostile", "total_action_train_pass": 3}
    before = list(m.items())
    p = MetricProcessor()
    with pytest.raises(ProcessingError, match="last_updated") as info:
        if batch:
            p.process_many(m, [({"action": "train", "success": True}, now)] * 3)
        else:
            p.process(m, {"action": "train", "success": True}, {"now": now})
    assert list(m.items()) == before
    assert isinstance(info.value.__cause__, RuntimeError)


class _SneakyInt(int):
    """An int outside the 64-bit range whose conversion to float adds a key to
    the record being read."""

    record = None

    def __float__(self):
        type(self).record["added_%d" % len(type(self).record)] = 1
        return float(int(self))


@pytest.mark.parametrize("call", ["process", "process_many", "to_prometheus"])
def test_a_record_mutated_while_read_is_an_error_or_read_never_a_panic(call):
    """Python code that changes the record (or the metrics) while it is read
    gives a result or a ProcessingError, never pyo3's PanicException."""
    now = datetime(2025, 1, 13, 10)
    record = {"action": "train", "extra": _SneakyInt(1 << 70), "more": 1}
    _SneakyInt.record = record
    p = MetricProcessor()
    m = {}
    try:
        if call == "process":
            p.process(m, record, {"now": now})
        elif call == "process_many":
            p.process_many(m, [(record, now), (record, now)])
        else:
            _SneakyInt.record = m
            m.update({"total_action_train_pass": 1, "x": _SneakyInt(1 << 70)})
            p.to_prometheus(m)
    except ProcessingError:
        pass
    except BaseException as e:  # PanicException derives from BaseException
        pytest.fail("%s raised %s: %s" % (call, type(e).__name__, e))


@pytest.mark.parametrize("where", ["record", "metrics"])
def test_out_of_range_ints_are_processing_errors_naming_the_key(where):
    """An int outside what a key accepts is a ProcessingError naming the key,
    from process() as from process_many()."""
    now = datetime(2025, 1, 13, 10)
    for value in (1 << 64, -(1 << 63) - 1, 1 << 200, 10**400):
        if where == "record":
            m, record = {}, {"time_lapsed": value}
            key = "time_lapsed"
            if value == 10**400:  # beyond a float too, under a key no attribute reads
                record, key = {"time_lapsed": 1, "extra": value}, "extra"
        else:
            m, record = {"time_lapsed_today": value}, {"time_lapsed": 1}
            key = "time_lapsed_today"
        for run in (lambda: MetricProcessor().process(m, record, {"now": now}),
                    lambda: MetricProcessor().process_many(m, [(record, now)])):
            before = dict(m)
            with pytest.raises(ProcessingError, match=key):
                run()
            assert m == before
