"""nixl_telemetry.tao: the modules of nvidia_tao_core.telemetry with their public
names and signatures (compared with the installed reference, module by module),
a TAO user's code run with only the package name replaced, the reference's
unit cases through its module paths, the corpus, Python builders."""

import enum
import importlib
import inspect
import json
from datetime import datetime

import pytest

from nixl_telemetry import tao

from conftest import TAO_DATA

REFERENCE = "nvidia_tao_core.telemetry"
OURS = "nixl_telemetry.tao"
# The reference's modules the drop-in has (its others send data to NVIDIA's
# service, read NVML or migrate a MongoDB database: not the processor).
MODULES = ["types", "config", "utils", "processor", "builders", "builders.base",
           "builders.legacy", "builders.comprehensive", "builders.time", "builders.labeled"]


def public_names(module):
    """A module's API as a TAO user imports from it: every name without a
    leading underscore that is not a module, nor an import from outside the
    package (a class, function or typing alias of the standard library); the
    package's own re-exports and constants included."""
    names = {}
    for name, value in vars(module).items():
        if name.startswith("_") or inspect.ismodule(value):
            continue
        defined_in = getattr(value, "__module__", None)
        if defined_in is not None and not defined_in.startswith((REFERENCE, OURS)):
            continue
        names[name] = value
    return names


def counterpart(module_name):
    return module_name.replace(REFERENCE, OURS)


@pytest.mark.parametrize("module", MODULES)
def test_each_module_of_the_reference_has_its_public_names(module):
    ref = importlib.import_module("%s.%s" % (REFERENCE, module))
    ours = importlib.import_module("%s.%s" % (OURS, module))
    expected = public_names(ref)
    assert sorted(set(expected) - set(vars(ours))) == []
    for name, value in expected.items():
        mine = getattr(ours, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            # The same object as in the module that defines it, as in the reference.
            assert mine.__module__ == counterpart(value.__module__), (module, name)
            assert mine.__name__ == value.__name__
    if "METRIC_ATTRIBUTES" in expected:
        assert ours.METRIC_ATTRIBUTES is tao.config.METRIC_ATTRIBUTES
    if "TELEMETRY_SANITIZE_PATTERN" in expected:
        assert ours.TELEMETRY_SANITIZE_PATTERN == ref.TELEMETRY_SANITIZE_PATTERN
    if hasattr(ref, "__all__"):
        assert list(ours.__all__) == list(ref.__all__)


def test_the_package_gathers_every_public_name():
    everything = set()
    for module in MODULES:
        everything |= set(public_names(importlib.import_module("%s.%s" % (REFERENCE, module))))
    assert sorted(everything - set(tao.__all__)) == []
    assert all(hasattr(tao, name) for name in tao.__all__)


def signature_of(obj):
    return [(p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values()]


def defined_names():
    """(module, name) of each class and function the reference's modules define."""
    pairs = []
    for module in MODULES:
        ref = importlib.import_module("%s.%s" % (REFERENCE, module))
        for name, value in public_names(ref).items():
            if (inspect.isclass(value) or inspect.isfunction(value)) \
                    and value.__module__ == ref.__name__:
                pairs.append((module, name))
    return pairs


@pytest.mark.parametrize("module, name", defined_names())
def test_signatures_match(module, name):
    ref = getattr(importlib.import_module("%s.%s" % (REFERENCE, module)), name)
    ours = getattr(importlib.import_module("%s.%s" % (OURS, module)), name)
    if inspect.isfunction(ref):
        assert signature_of(ours) == signature_of(ref)
        return
    # The public methods, __init__, and the GPU helpers of the labeled builder
    # (the reference's unit cases call them).
    helpers = {"__init__", "_extract_gpu_type", "_extract_primary_gpu"}
    for method_name, method in vars(ref).items():
        if inspect.isfunction(method) and (not method_name.startswith("_")
                                           or method_name in helpers):
            assert signature_of(getattr(ours, method_name)) == signature_of(method), \
                method_name
    if hasattr(ref, "__dataclass_fields__"):
        assert list(ref.__dataclass_fields__) == list(ours.__dataclass_fields__)
    if ref.__name__ == "TelemetryData":
        assert list(ref.__annotations__) == list(ours.__annotations__)
    if issubclass(ref, enum.Enum):
        assert [(m.name, m.value) for m in ref] == [(m.name, m.value) for m in ours]


# A TAO user's code, as written against the reference: it must run unchanged
# but for the package's name, with the same results.
TAO_USER_CODE = """
from datetime import datetime

from nvidia_tao_core.telemetry.builders.base import MetricBuilder
from nvidia_tao_core.telemetry.builders.labeled import LabeledMetricsBuilder
from nvidia_tao_core.telemetry.config import METRIC_ATTRIBUTES, get_attribute_map
from nvidia_tao_core.telemetry.processor import MetricProcessor
from nvidia_tao_core.telemetry.types import AttributeType, MetricAttribute, TelemetryData
from nvidia_tao_core.telemetry.utils import (
    TELEMETRY_SANITIZE_PATTERN, create_gpu_identifier, extract_telemetry_data,
    sanitize_field_value)
import nvidia_tao_core.telemetry.builders as builders


class FailureBuilder(MetricBuilder):
    def build(self, metrics, telemetry_data: TelemetryData, context):
        if not telemetry_data["success"]:
            metrics["failures"] = metrics.get("failures", 0) + 1


def run(items):
    processor = MetricProcessor()
    processor.add_builder(FailureBuilder())
    metrics = {}
    for record, now in items:
        processor.process(metrics, record, {"now": now})
    only_time = MetricProcessor(builders=[builders.TimeMetricsBuilder()])
    times = {}
    for record, now in items:
        only_time.process(times, record, {"now": now})
    labeled = LabeledMetricsBuilder()
    return {
        "metrics": metrics,
        "times": times,
        "pattern": TELEMETRY_SANITIZE_PATTERN,
        "names": sorted(get_attribute_map()),
        "types": [a.attr_type.value for a in METRIC_ATTRIBUTES],
        "attribute": MetricAttribute("x", "x", AttributeType.STRING, "d").metric_order,
        "gpu": create_gpu_identifier(["NVIDIA A100", "NVIDIA A100", "Tesla V100"]),
        "sanitized": sanitize_field_value("ResNet-50 v2", uppercase=True),
        "data": extract_telemetry_data({"action": "Train", "gpu": ["NVIDIA H100"]}),
        "primary": labeled._extract_primary_gpu(["NVIDIA A100", "NVIDIA H100 80GB HBM3"]),
    }
"""


def test_a_tao_users_code_runs_with_only_the_package_name_replaced():
    items = [(json.loads(line)["record"], datetime.fromisoformat(json.loads(line)["now"]))
             for line in (TAO_DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    # The documented departures (docs/processor.md) stay out: GPU names that
    # a label would need to escape, and dates whose day-of-month repeats
    # across months.
    items = [(record, now) for record, now in items
             if not any(set(str(gpu)) & set('"\\\n') for gpu in record.get("gpu") or [])]
    items = [item for item in items if item[1].month == items[0][1].month][:60]
    assert len(items) >= 20
    results = []
    for code in (TAO_USER_CODE, TAO_USER_CODE.replace(REFERENCE, OURS)):
        namespace = {}
        exec(compile(code, "tao_user", "exec"), namespace)
        results.append(namespace["run"](items))
    assert results[1] == results[0]


def test_registry_values_match():
    from nvidia_tao_core.telemetry import config

    def flat(attrs):
        return [(a.name, a.raw_key, a.attr_type.value, a.default, a.include_in_comprehensive,
                 a.metric_order) for a in attrs]

    assert flat(tao.config.METRIC_ATTRIBUTES) == flat(config.METRIC_ATTRIBUTES)
    assert list(tao.config.get_attribute_map()) == list(config.get_attribute_map())
    assert list(tao.config.get_raw_key_map()) == list(config.get_raw_key_map())
    assert [t.value for t in tao.AttributeType] == ["string", "boolean", "integer", "list"]


def unit_cases():
    return json.loads((TAO_DATA / "unit_cases.json").read_text(encoding="utf-8"))


def test_unit_cases():
    """The reference's unit cases, through the reference's module paths."""
    from nixl_telemetry.tao.builders.labeled import LabeledMetricsBuilder
    from nixl_telemetry.tao.utils import (
        create_gpu_identifier, extract_telemetry_data, sanitize_field_value)

    cases = unit_cases()
    for case in cases["sanitize_field_value"]:
        assert sanitize_field_value(case["value"], uppercase=case["uppercase"]) == \
            case["expected"], case
    for case in cases["create_gpu_identifier"]:
        assert create_gpu_identifier(case["gpus"]) == case["expected"], case
    for case in cases["extract_telemetry_data"]:
        assert extract_telemetry_data(case["raw"]) == case["expected"], case
    labeled = LabeledMetricsBuilder()
    for case in cases["labeled_extract_gpu_type"]:
        assert labeled._extract_gpu_type(case["gpu_name"]) == case["expected"], case
    for case in cases["labeled_extract_primary_gpu"]:
        assert labeled._extract_primary_gpu(case["gpus"]) == case["expected"], case


CONFIGS = {
    "default": lambda: None,
    "legacy": lambda: [tao.LegacyMetricsBuilder()],
    "comprehensive": lambda: [tao.ComprehensiveMetricsBuilder()],
    "time": lambda: [tao.TimeMetricsBuilder()],
    "labeled": lambda: [tao.LabeledMetricsBuilder()],
}


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_corpus_matches_the_golden_files(config):
    processor = tao.MetricProcessor(builders=CONFIGS[config]())
    metrics = {}
    for line in (TAO_DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        line = json.loads(line)
        context = {"now": datetime.fromisoformat(line["now"])}
        assert processor.process(metrics, line["record"], context) is metrics
        assert set(context) == {"now", "old_now"}  # filled in, as the reference does
    expected = json.loads((TAO_DATA / ("expected_%s.json" % config)).read_text(encoding="utf-8"))
    assert metrics == expected


class AlertBuilder(tao.MetricBuilder):
    def build(self, metrics, telemetry_data, context):
        if not telemetry_data["success"]:
            metrics["failures_today"] = metrics.get("failures_today", 0) + 1
        metrics["seen_last_updated"] = metrics.get("last_updated")
        metrics["data_keys"] = sorted(telemetry_data)


class Exploding(tao.MetricBuilder):
    def build(self, metrics, telemetry_data, context):
        metrics["half_written"] = 1
        raise RuntimeError("boom")


def test_python_builders_run_after_the_built_in_ones():
    processor = tao.MetricProcessor()
    processor.add_builder(AlertBuilder())
    m = {}
    processor.process(m, {"action": "train"}, {"now": datetime(2025, 1, 1)})
    processor.process(m, {"action": "train", "success": True}, {"now": datetime(2025, 1, 2)})
    assert m["failures_today"] == 1 and m["total_action_train_pass"] == 1
    assert m["seen_last_updated"] == "2025-01-01T00:00:00"  # before this record's stamp
    assert m["data_keys"] == sorted(tao.get_attribute_map())
    # A subclass of a built-in builder that overrides build is a Python builder.

    class Counting(tao.LegacyMetricsBuilder):
        def build(self, metrics, telemetry_data, context):
            metrics["counted"] = metrics.get("counted", 0) + 1

    m2 = tao.MetricProcessor(builders=[Counting()]).process({}, {}, {"now": datetime(2025, 1, 1)})
    assert m2 == {"counted": 1, "last_updated": "2025-01-01T00:00:00"}


def test_a_failing_python_builder_leaves_the_dict_unchanged():
    processor = tao.MetricProcessor(builders=[tao.LegacyMetricsBuilder(), Exploding()])
    m = {"kept": 1}
    with pytest.raises(RuntimeError, match="boom"):
        processor.process(m, {"action": "train"}, {"now": datetime(2025, 1, 1)})
    assert m == {"kept": 1}


def test_built_in_builders_called_directly_match_the_reference():
    from nvidia_tao_core.telemetry import builders as ref_builders
    from nvidia_tao_core.telemetry import utils as ref_utils

    raw = {"action": "Train", "network": "ResNet-50", "gpu": ["NVIDIA A100", "NVIDIA V100"],
           "success": True, "time_lapsed": 30}
    context = {"now": datetime(2025, 1, 2), "old_now": datetime(2025, 1, 1)}
    for name in ["LegacyMetricsBuilder", "ComprehensiveMetricsBuilder", "TimeMetricsBuilder",
                 "LabeledMetricsBuilder"]:
        ours, ref = {"time_lapsed_today": 5}, {"time_lapsed_today": 5}
        getattr(tao, name)().build(ours, tao.extract_telemetry_data(raw), context)
        getattr(ref_builders, name)().build(ref, ref_utils.extract_telemetry_data(raw), context)
        assert ours == ref, name


def test_registry_extensions_are_honoured():
    """An attribute appended to METRIC_ATTRIBUTES (the one list every module
    names, as in the reference) is used by processors that run afterwards."""
    added = tao.MetricAttribute("framework", "framework", tao.AttributeType.STRING, "pytorch",
                                metric_order=7)
    tao.config.METRIC_ATTRIBUTES.append(added)
    try:
        m = tao.MetricProcessor(builders=[tao.ComprehensiveMetricsBuilder()]).process(
            {}, {"action": "train", "framework": "JAX"}, {"now": datetime(2025, 1, 1)})
        assert ("network_unknown_action_train_version_unknown_status_fail_framework_jax_gpu_1_"
                "UNKNOWN_1" in m)
        assert tao.extract_telemetry_data({"framework": "A-B"})["framework"] == "a_b"
        assert tao.utils.extract_telemetry_data({"framework": "A-B"})["framework"] == "a_b"
    finally:
        tao.config.METRIC_ATTRIBUTES.remove(added)
    assert "framework" not in tao.extract_telemetry_data({"framework": "A-B"})


def test_errors_name_the_key_and_leave_the_dict_unchanged():
    processor = tao.MetricProcessor()
    m = {}
    processor.process(m, {"action": "a"}, {"now": datetime(2025, 1, 1)})
    before = dict(m)
    with pytest.raises(tao.ProcessingError, match="time_lapsed"):
        processor.process(m, {"time_lapsed": "10"}, {"now": datetime(2025, 1, 2)})
    assert m == before
