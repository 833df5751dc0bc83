"""nixl_telemetry.tao against the live reference, nvidia_tao_core.telemetry, on
random records (hostile ones included).

Each generated sequence of records goes through both processors, record by
record. A record ours rejects must be one whose values do not fit their types
(the documented departure "rejected whole"); ours must then leave the dict as it
was, and the record is given to neither. Every other record must give the same
dict. The other documented departures are kept out of the comparison as follows
(docs/processor.md, "Where we depart from the reference"):

1. calendar date: consecutive `now`s are less than 27 days apart, so the
   day-of-month changes exactly when the date does;
2. status once: no string attribute of the comprehensive name sanitises to `status`;
3. RTX suffix: no GPU name whose RTX model part the two rules cut differently;
4. primary-GPU ties: the GPU list is reordered so that the reference's pick
   among equally common unlisted types comes first (the pick is the same, the
   counts do not depend on order);
5. escaping: texts that reach a label unsanitised (GPU names, booleans given as
   strings) have no `"`, `\\` or newline;
6. null: the reference gets the record without its `None` members.

The CI runs a fixed number of examples with a fixed seed (profile `ci`); a longer
random run: `HYPOTHESIS_PROFILE=long bash scripts/test-python.sh -k differential`.
"""

import json
from datetime import datetime, timedelta

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from nixl_telemetry import tao

from conftest import TAO_DATA

# The reference is installed by scripts/test-python.sh (pip, --no-deps); without
# it these tests fail rather than pass unchecked.
from nvidia_tao_core.telemetry import processor as ref_processor
from nvidia_tao_core.telemetry import utils as ref_utils
from nvidia_tao_core.telemetry.builders import LabeledMetricsBuilder as RefLabeled


REF_LABELED = RefLabeled()

# Hostile text: punctuation, whitespace, accents (precomposed and combining),
# ß and ligatures (full case mapping), CJK, emoji, full-width letters and digits.
HOSTILE = "aZ09 -_./\\\"'{}=,:;\t\n\u00e9e\u0301\u00df\ufb01\u7f51\U0001f680\uff21\uff11\u0130\u2163"
LABEL_SAFE = "".join(c for c in HOSTILE if c not in "\"\\\n")

KNOWN_GPUS = sorted({
    case["gpu_name"]
    for case in json.loads((TAO_DATA / "unit_cases.json").read_text(encoding="utf-8"))[
        "labeled_extract_gpu_type"]
    # Only names where the reference agrees with the documented rules (departure 3)
    # and that need no escaping in a label (departure 5).
    if REF_LABELED._extract_gpu_type(case["gpu_name"]) == case["expected"]
    and not set(case["gpu_name"]) & set("\"\\\n")
} | {"NVIDIA A100", "NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB", "NVIDIA L4", "gpu0"})

words = st.text(alphabet=HOSTILE, max_size=10)
label_safe_words = st.text(alphabet=LABEL_SAFE, max_size=10)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
in_range_ints = st.integers(min_value=-(2**63), max_value=2**64 - 1)
scalars = st.one_of(st.none(), st.booleans(), in_range_ints, finite_floats, words,
                    st.sampled_from(["train", "status", "Status", "evaluate", "5.3.0"]))
label_safe_scalars = st.one_of(st.none(), st.booleans(), in_range_ints, finite_floats,
                               label_safe_words)
gpu_names = st.one_of(st.sampled_from(KNOWN_GPUS), label_safe_words)
hostile = st.one_of(st.lists(st.integers(), max_size=2), st.dictionaries(words, st.integers(),
                                                                        max_size=2))

FIELDS = {
    "version": st.one_of(scalars, hostile),
    "action": st.one_of(scalars, hostile),
    "network": st.one_of(scalars, hostile),
    "client_type": st.one_of(scalars, hostile),
    "success": st.one_of(scalars, hostile),
    "user_error": st.one_of(label_safe_scalars, hostile),
    "automl_triggered": st.one_of(label_safe_scalars, hostile),
    "time_lapsed": st.one_of(st.integers(min_value=-10**6, max_value=10**12), st.none(),
                             st.booleans(), finite_floats, words,
                             st.integers(min_value=2**63, max_value=2**70)),
    "gpu": st.one_of(st.lists(gpu_names, max_size=6), st.none(), words,
                     st.lists(st.one_of(gpu_names, st.integers()), max_size=3)),
    "extra": scalars,
    "Network": scalars,
}


@st.composite
def records(draw):
    present = draw(st.lists(st.sampled_from(sorted(FIELDS)), unique=True))
    return {key: draw(FIELDS[key]) for key in present}


def is_scalar(v):
    return v is None or isinstance(v, (bool, int, float, str))


def fits_types(record):
    """What ours accepts (docs/processor.md, "Types")."""
    for key in ("version", "action", "network", "client_type", "success", "user_error",
                "automl_triggered"):
        if key in record and not is_scalar(record[key]):
            return False
    t = record.get("time_lapsed")
    if t is not None and (isinstance(t, bool) or not isinstance(t, int)
                          or not -(2**63) <= t < 2**63):
        return False
    g = record.get("gpu")
    if g is not None and not (isinstance(g, list) and all(isinstance(x, str) for x in g)):
        return False
    return True


def rtx_rules_differ(name):
    upper = str(name).upper().replace(" ", "_").replace("-", "_")
    if "RTX" not in upper:
        return False
    parts = upper.split("_")
    for i, part in enumerate(parts):
        if part == "RTX" and i + 1 < len(parts):
            model = parts[i + 1]
            cut = model[:-2] if model.endswith("TI") else model
            cut = cut[:-3] if cut.endswith("ADA") else cut
            return model.replace("TI", "").replace("ADA", "") != cut
    return False


def ties_first(record):
    """The record with its GPU list reordered so that the reference's pick among
    equally common unlisted types comes first (departure 4): given to both."""
    out = dict(record)
    gpus = out.get("gpu")
    if isinstance(gpus, list) and gpus:
        types = [REF_LABELED._extract_gpu_type(g) for g in gpus]
        if not set(types) & set(REF_LABELED.gpu_priority):
            pick = REF_LABELED._extract_primary_gpu(gpus)
            out["gpu"] = [g for g, t in zip(gpus, types) if t == pick] + \
                         [g for g, t in zip(gpus, types) if t != pick]
    return out


def without_none(record):
    """The record as the reference must see it (departure 6)."""
    return {k: v for k, v in record.items() if v is not None}


def comparable(record):
    """False for records the departures 2 and 3 make differ on purpose."""
    for key in ("version", "action", "network"):
        if key in record and is_scalar(record[key]) and record[key] is not None \
                and ref_utils.sanitize_field_value(record[key]) == "status":
            return False
    gpus = record.get("gpu")
    if isinstance(gpus, list) and any(rtx_rules_differ(g) for g in gpus):
        return False
    return True


@given(
    st.lists(st.tuples(records(), st.integers(min_value=0, max_value=26 * 86400 * 10**6)),
             min_size=1, max_size=6),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1)),
)
def test_processor_matches_the_reference(steps, start):
    ours, ref = {}, {}
    ours_processor = tao.MetricProcessor()
    reference = ref_processor.MetricProcessor()
    now = start
    for record, step_us in steps:
        now = now + timedelta(microseconds=step_us)
        assume(comparable(record))
        if not fits_types(record):
            before = dict(ours)
            with pytest.raises(tao.ProcessingError):
                ours_processor.process(ours, record, {"now": now})
            assert ours == before
            continue
        record = ties_first(record)
        ours_processor.process(ours, record, {"now": now})
        reference.process(ref, without_none(record), {"now": now})
        assert ours == ref, record


@given(
    st.lists(st.tuples(records(), st.integers(min_value=0, max_value=26 * 86400 * 10**6),
                       st.booleans()),
             min_size=1, max_size=12),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1)),
)
def test_process_many_batches_match_the_reference(steps, start):
    """The batch path (nixl_telemetry.MetricProcessor.process_many, which keeps
    its map between batches of one dict) against the reference's process loop:
    the records are cut into batches where the third member of a step says, and
    the dicts compared after every batch. Records ours rejects are left out
    (test_processor_matches_the_reference checks them)."""
    from nixl_telemetry import MetricProcessor

    ours, ref = {}, {}
    ours_processor = MetricProcessor()
    reference = ref_processor.MetricProcessor()
    now = start
    batch = []
    for index, (record, step_us, cut) in enumerate(steps):
        now = now + timedelta(microseconds=step_us)
        assume(comparable(record) and fits_types(record))
        record = ties_first(record)
        batch.append((record, now))
        reference.process(ref, without_none(record), {"now": now})
        if cut or index == len(steps) - 1:
            ours_processor.process_many(ours, batch)
            batch = []
            assert ours == ref, record


@given(records())
def test_extract_telemetry_data_matches_the_reference(record):
    if not fits_types(record):
        with pytest.raises(tao.ProcessingError):
            tao.extract_telemetry_data(record)
        return
    assert tao.extract_telemetry_data(record) == ref_utils.extract_telemetry_data(
        {k: v for k, v in record.items() if v is not None})


@given(st.one_of(scalars, hostile, st.lists(words)), st.booleans())
def test_sanitize_field_value_matches_the_reference(value, uppercase):
    assert tao.sanitize_field_value(value, uppercase) == \
        ref_utils.sanitize_field_value(value, uppercase)


@given(st.lists(st.one_of(gpu_names, words), max_size=8))
def test_create_gpu_identifier_matches_the_reference(gpus):
    assert tao.create_gpu_identifier(gpus) == ref_utils.create_gpu_identifier(gpus)


@given(st.one_of(gpu_names, words))
def test_gpu_type_matches_the_reference(name):
    assume(not rtx_rules_differ(name))
    assert tao.LabeledMetricsBuilder()._extract_gpu_type(name) == \
        REF_LABELED._extract_gpu_type(name)
