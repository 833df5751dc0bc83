"""No panic crosses the Python boundary: the public calls, given hostile objects
(subclasses whose conversions raise or change the record or the dict being
read, keys that hash alike and refuse comparison, nesting, huge ints, bad
datetimes, wrong types), return or raise an ordinary exception, never pyo3's
PanicException (a BaseException that `except Exception` lets through); a
processing call that fails leaves the dict exactly as it was.

Hypothesis draws the objects and the calls (profile `ci` of conftest.py: a
fixed number of examples with a fixed seed)."""

from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

import nixl_telemetry as nt
from nixl_telemetry import MetricProcessor, ProcessingError, tao



class Hostile(Exception):
    """What the hostile objects raise."""


class Target:
    """Where hostile objects' side effects land (the containers being read),
    and whether hostile objects act at all (only during a call under test,
    never while Hypothesis builds them)."""

    containers = []
    armed = False


def containers_in(value, found=None):
    """Every dict and list reachable from `value` (each once)."""
    found = [] if found is None else found
    if isinstance(value, (dict, list)) and not any(value is f for f in found):
        found.append(value)
        for item in (list(dict.values(value)) if isinstance(value, dict) else list(value)):
            containers_in(item, found)
    elif isinstance(value, tuple):
        for item in value:
            containers_in(item, found)
    return found


def _poke():
    """Changes every targeted container: a key added to dicts (and the first
    one removed from larger ones), an item appended to lists."""
    if not Target.armed:
        return
    for target in Target.containers:
        if isinstance(target, dict):
            dict.__setitem__(target, "added_%d" % len(target), 1)
            if len(target) > 4:
                dict.pop(target, next(iter(dict.keys(target))), None)
        else:
            target.append({"action": "appended"})


class MutatingInt(int):
    def __float__(self):
        _poke()
        return 1.0

    def __index__(self):
        _poke()
        return 1


class RaisingInt(int):
    def __float__(self):
        raise Hostile("__float__")

    def __index__(self):
        raise Hostile("__index__")

    def __int__(self):
        raise Hostile("__int__")


class OwnHashStr(str):
    def __hash__(self):
        return hash(("own", str(self)))

    def __eq__(self, other):
        return type(other) is OwnHashStr and str.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)


class RaisingStr(str):
    def __str__(self):
        raise Hostile("__str__")

    def __hash__(self):
        _poke()
        return str.__hash__(self)


class LikeKey:
    """Hashes like a metric's key and refuses every comparison."""

    def __init__(self, like):
        self.like = like

    def __hash__(self):
        return hash(self.like)

    def __eq__(self, other):
        if not Target.armed:
            return self is other
        _poke()
        raise Hostile("__eq__")


class RaisingFloat(float):
    def __float__(self):
        raise Hostile("float __float__")


class OddDatetime(datetime):
    @property
    def year(self):
        _poke()
        raise Hostile("year")


class ItemsDict(dict):
    def items(self):
        raise Hostile("items")

    def keys(self):
        raise Hostile("keys")

    def __iter__(self):
        _poke()
        raise Hostile("__iter__")


def _self_list():
    value = ["x"]
    value.append(value)
    return value


def _deep(levels):
    value = "leaf"
    for _ in range(levels):
        value = [value]
    return value


KEYS = ["action", "network", "version", "success", "user_error", "time_lapsed", "gpu",
        "client_type", "automl_triggered", "extra"]
METRIC_KEYS = ["last_updated", "time_lapsed_today", "total_action_train_pass",
               "version_unknown_action_train", 'tao_job_total{tao_action="train"}', "other"]

hostile_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(), st.text(max_size=6), st.sampled_from(["train", "\udc80", "", "NVIDIA A100"]),
    st.builds(MutatingInt, st.sampled_from([1, 2**65, -(2**64)])),
    st.builds(RaisingInt, st.sampled_from([1, 2**65])),
    st.builds(OwnHashStr, st.sampled_from(["train", "action"])),
    st.builds(RaisingStr, st.sampled_from(["train", "x"])),
    st.builds(RaisingFloat, st.just(1.5)),
    st.builds(lambda: object()), st.builds(_self_list), st.builds(lambda: _deep(200)),
    st.builds(OddDatetime, st.just(2025), st.just(1), st.just(2)),
)
hostile_values = st.recursive(
    hostile_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner),
                            st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)),
    max_leaves=6,
)
hostile_keys = st.one_of(
    st.sampled_from(KEYS), st.builds(OwnHashStr, st.sampled_from(KEYS)),
    st.builds(RaisingStr, st.sampled_from(KEYS)), st.integers(0, 3),
    st.builds(LikeKey, st.sampled_from(KEYS)),
)
records = st.one_of(
    st.dictionaries(hostile_keys, hostile_values, max_size=5),
    st.builds(ItemsDict, st.dictionaries(st.sampled_from(KEYS), hostile_values, max_size=3)),
    hostile_values,
)
datetimes = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.builds(OddDatetime, st.just(2025), st.just(1), st.just(2)),
    st.just(datetime(2025, 1, 1, tzinfo=timezone(timedelta(hours=5)))),
    st.just(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))),
    st.sampled_from(["2025-01-01", 5, object()]),
)
contexts = st.one_of(datetimes, st.dictionaries(st.sampled_from(["now", "old_now", "x"]),
                                                datetimes, max_size=2))
metric_values = st.one_of(
    st.integers(min_value=-(2**65), max_value=2**65), st.text(max_size=4),
    st.sampled_from(["2025-01-01T00:00:00", "garbage", None, 1.5]),
    st.builds(MutatingInt, st.sampled_from([3, 2**66])), st.builds(RaisingInt, st.just(3)),
)
metrics_dicts = st.dictionaries(
    st.one_of(st.sampled_from(METRIC_KEYS), st.builds(LikeKey, st.sampled_from(METRIC_KEYS)),
              st.builds(OwnHashStr, st.sampled_from(METRIC_KEYS))),
    metric_values, max_size=5)
builders_arg = st.one_of(st.none(), st.sampled_from([[], ["legacy"], "time,labeled", ["nope"]]),
                         st.lists(hostile_scalars, max_size=2), hostile_scalars)


def snapshot(d):
    return [(k, v) for k, v in dict.items(d)]


def same(a, b):
    return len(a) == len(b) and all(ka is kb and va is vb for (ka, va), (kb, vb) in zip(a, b))


def call_safely(fn, *args, **kwargs):
    """Runs a public call; returns the ordinary exception it raised, if any.
    Anything that is not an Exception (PanicException among them) fails."""
    Target.armed = True
    try:
        fn(*args, **kwargs)
    except Exception as e:  # an ordinary error: fine
        return e
    except BaseException as e:  # noqa: B036 - the point of the test
        raise AssertionError("%s raised %s (not an Exception): %s"
                             % (getattr(fn, "__name__", fn), type(e).__name__, e)) from e
    finally:
        Target.armed = False
    return None


@given(builders=builders_arg, metrics=metrics_dicts, record=records, context=contexts,
       batch=st.lists(st.one_of(records, st.tuples(records, contexts),
                                st.tuples(records), st.just(5)), max_size=4),
       target=st.sampled_from(["inputs", "metrics", None]))
def test_processing_calls_raise_ordinary_errors_and_change_all_or_nothing(
        builders, metrics, record, context, batch, target):
    err = call_safely(MetricProcessor, builders)
    processor = MetricProcessor(builders) if err is None else MetricProcessor()
    Target.containers = {"inputs": containers_in([record, batch, context]),
                         "metrics": [metrics]}.get(target, [])
    for run in (lambda: processor.process(metrics, record, context),
                lambda: processor.process_many(metrics, batch, context),
                lambda: processor.process_many(metrics, iter(batch))):
        before = snapshot(metrics)
        err = call_safely(run)
        if err is not None:
            assert isinstance(err, (ProcessingError, TypeError)), repr(err)
            if target != "metrics":
                assert same(snapshot(metrics), before), (err, before, snapshot(metrics))
    call_safely(processor.to_prometheus, metrics)
    Target.containers = []


@given(value=hostile_values, gpus=hostile_values, raw=records)
def test_tao_helpers_raise_ordinary_errors(value, gpus, raw):
    Target.containers = containers_in([value, gpus, raw])
    call_safely(tao.sanitize_field_value, value)
    call_safely(tao.sanitize_field_value, value, uppercase=True)
    call_safely(tao.create_gpu_identifier, gpus)
    call_safely(tao.extract_telemetry_data, raw)
    labeled = tao.LabeledMetricsBuilder()
    call_safely(labeled._extract_gpu_type, value)
    call_safely(labeled._extract_primary_gpu, gpus)
    call_safely(tao.MetricProcessor().process, {}, raw, None)
    Target.containers = []


@given(args=st.lists(hostile_values, max_size=6),
       kwargs=st.dictionaries(st.sampled_from(["timestamp_us", "category", "name", "value",
                                               "agent", "other"]), hostile_values, max_size=3))
def test_event_construction_raises_ordinary_errors(args, kwargs):
    err = call_safely(nt.Event, *args, **kwargs)
    if err is None:
        event = nt.Event(*args, **kwargs)
        for attribute in ("timestamp_us", "category", "category_name", "name", "value", "agent"):
            getattr(event, attribute)
        call_safely(event.as_dict)
        call_safely(repr, event)
        call_safely(lambda: event == nt.Event(*args, **kwargs))


@given(settings_=st.dictionaries(
    st.sampled_from(["enabled", "buffer_size", "run_interval_ms", "exporter",
                     "plugin_dirs", "enabled_metrics", "ring_version", "nope"]),
    hostile_values, max_size=3),
    category=hostile_values, name=hostile_values, value=hostile_values)
def test_recording_calls_raise_ordinary_errors(settings_, category, name, value):
    settings_["exporter"] = "nop"
    telemetry = None
    err = call_safely(nt.Telemetry, "hostile", **settings_)
    if err is None:
        telemetry = nt.Telemetry("hostile", **settings_)
    else:
        telemetry = nt.Telemetry("hostile", exporter="nop")
    with telemetry:
        call_safely(telemetry.record, category, name, value)
        call_safely(telemetry.handle, category, name)
        call_safely(telemetry.transfer_completed, value, value, value)
        call_safely(telemetry.error, name)
        call_safely(telemetry.backend_event, name, value)


@given(path=hostile_values, peek=hostile_values, columns=hostile_values)
def test_reading_calls_raise_ordinary_errors(path, peek, columns):
    call_safely(nt.read_ring, path, peek=peek, columns=columns)
    call_safely(nt.Ring, path, peek=peek)
