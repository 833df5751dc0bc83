"""nixl_telemetry.tao: the public names and signatures of nvidia_tao_core.telemetry,
its unit cases and corpus, Python builders."""

import importlib
import inspect
import json
from datetime import datetime

import pytest

from nixl_telemetry import tao

from conftest import TAO_DATA

REFERENCE_MODULES = [
    "nvidia_tao_core.telemetry.types",
    "nvidia_tao_core.telemetry.config",
    "nvidia_tao_core.telemetry.utils",
    "nvidia_tao_core.telemetry.processor",
    "nvidia_tao_core.telemetry.builders",
]
# Module-level details of the reference that are not part of its API: imports and
# the regular expression its sanitiser is written with.
NOT_API = {"TELEMETRY_SANITIZE_PATTERN", "Any", "Dict", "List", "Optional", "TypedDict",
           "datetime", "dataclass", "Enum", "re", "ABC", "abstractmethod"}


def reference_public_names():
    names = {}
    for module_name in REFERENCE_MODULES:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if name.startswith("_") or name in NOT_API or inspect.ismodule(value):
                continue
            names[name] = value
    return names


def test_every_public_name_is_there():
    missing = sorted(set(reference_public_names()) - set(dir(tao)))
    assert missing == []
    assert set(tao.__all__) >= set(reference_public_names())


def signature_of(obj):
    return [(p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values()]


@pytest.mark.parametrize("name", sorted(reference_public_names()))
def test_signatures_match(name):
    ref = reference_public_names()[name]
    ours = getattr(tao, name)
    if inspect.isfunction(ref):
        assert signature_of(ours) == signature_of(ref)
    elif inspect.isclass(ref):
        for method_name, method in vars(ref).items():
            if inspect.isfunction(method) and (not method_name.startswith("_")
                                               or method_name == "__init__"):
                assert signature_of(getattr(ours, method_name)) == signature_of(method), \
                    method_name
        if issubclass(ref, object) and hasattr(ref, "__dataclass_fields__"):
            assert list(ref.__dataclass_fields__) == list(ours.__dataclass_fields__)
        if hasattr(ref, "__annotations__") and ref.__name__ == "TelemetryData":
            assert list(ref.__annotations__) == list(ours.__annotations__)
    else:
        assert repr(ours) == repr(ref).replace("nvidia_tao_core.telemetry.types", "nixl_telemetry.tao") \
            or len(ours) == len(ref)


def test_registry_values_match():
    from nvidia_tao_core.telemetry import config

    def flat(attrs):
        return [(a.name, a.raw_key, a.attr_type.value, a.default, a.include_in_comprehensive,
                 a.metric_order) for a in attrs]

    assert flat(tao.METRIC_ATTRIBUTES) == flat(config.METRIC_ATTRIBUTES)
    assert list(tao.get_attribute_map()) == list(config.get_attribute_map())
    assert list(tao.get_raw_key_map()) == list(config.get_raw_key_map())
    assert [t.value for t in tao.AttributeType] == ["string", "boolean", "integer", "list"]


def unit_cases():
    return json.loads((TAO_DATA / "unit_cases.json").read_text(encoding="utf-8"))


def test_unit_cases():
    cases = unit_cases()
    for case in cases["sanitize_field_value"]:
        assert tao.sanitize_field_value(case["value"], uppercase=case["uppercase"]) == \
            case["expected"], case
    for case in cases["create_gpu_identifier"]:
        assert tao.create_gpu_identifier(case["gpus"]) == case["expected"], case
    for case in cases["extract_telemetry_data"]:
        assert tao.extract_telemetry_data(case["raw"]) == case["expected"], case
    labeled = tao.LabeledMetricsBuilder()
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


def test_registry_extensions_are_honoured(monkeypatch):
    extended = list(tao.METRIC_ATTRIBUTES) + [tao.MetricAttribute(
        "framework", "framework", tao.AttributeType.STRING, "pytorch", metric_order=7)]
    monkeypatch.setattr(tao, "METRIC_ATTRIBUTES", extended)
    m = tao.MetricProcessor(builders=[tao.ComprehensiveMetricsBuilder()]).process(
        {}, {"action": "train", "framework": "JAX"}, {"now": datetime(2025, 1, 1)})
    assert ("network_unknown_action_train_version_unknown_status_fail_framework_jax_gpu_1_UNKNOWN_1"
            in m)
    assert tao.extract_telemetry_data({"framework": "A-B"})["framework"] == "a_b"


def test_errors_name_the_key_and_leave_the_dict_unchanged():
    processor = tao.MetricProcessor()
    m = {}
    processor.process(m, {"action": "a"}, {"now": datetime(2025, 1, 1)})
    before = dict(m)
    with pytest.raises(tao.ProcessingError, match="time_lapsed"):
        processor.process(m, {"time_lapsed": "10"}, {"now": datetime(2025, 1, 2)})
    assert m == before
