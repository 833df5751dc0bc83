//! The processor's rules beyond the corpus: now / old_now, builder lists, the six
//! departures from the reference, and the rendering of JSON scalars in string and
//! boolean attributes.

use nixl_telemetry_processor::{
    builders_from_list, extract_gpu_type, extract_primary_gpu, AttributeRegistry, BuildContext,
    BuildError, Context, LabeledMetricsBuilder, MetricBuilder, MetricProcessor, Metrics,
    MetricsUpdate, TelemetryData, TimeMetricsBuilder, Timestamp,
};

fn ts(text: &str) -> Timestamp {
    Timestamp::parse_iso(text).unwrap()
}

fn only(builders: &str) -> MetricProcessor {
    MetricProcessor::with_builders(
        AttributeRegistry::default(),
        builders_from_list(builders).unwrap(),
    )
    .unwrap()
}

/// Records the context each record was built with.
#[derive(Default)]
struct Spy(std::sync::Arc<std::sync::Mutex<Vec<BuildContext>>>);

impl MetricBuilder for Spy {
    fn name(&self) -> &str {
        "spy"
    }
    fn build(
        &mut self,
        _metrics: &mut MetricsUpdate<'_>,
        _data: &TelemetryData<'_>,
        context: &BuildContext,
    ) -> Result<(), BuildError> {
        self.0.lock().unwrap().push(*context);
        Ok(())
    }
}

#[test]
fn now_and_old_now_follow_the_reference() {
    let seen = std::sync::Arc::default();
    let mut processor = only("");
    processor
        .add_builder(Spy(std::sync::Arc::clone(&seen)))
        .unwrap();
    let mut metrics = Metrics::new();

    // First record: old_now is now.
    processor
        .process_json(
            &mut metrics,
            "{}",
            &Context::at(ts("2025-01-13T10:00:00.5")),
        )
        .unwrap();
    assert_eq!(
        metrics.last_updated().as_deref(),
        Some("2025-01-13T10:00:00.500000")
    );
    // Then old_now is the last_updated written by the previous record.
    processor
        .process_json(&mut metrics, "{}", &Context::at(ts("2025-01-14T00:00:00")))
        .unwrap();
    assert_eq!(
        metrics.last_updated().as_deref(),
        Some("2025-01-14T00:00:00")
    );
    // An explicit old_now wins over last_updated.
    let ctx = Context {
        now: Some(ts("2025-01-15T00:00:00")),
        old_now: Some(ts("2020-02-02T02:02:02")),
    };
    processor.process_json(&mut metrics, "{}", &ctx).unwrap();
    // A loaded last_updated (any accepted ISO form) is parsed; an empty one means none.
    metrics.set_last_updated(Some("2025-01-16 08:00".into()));
    processor
        .process_json(&mut metrics, "{}", &Context::at(ts("2025-01-16T09:00:00")))
        .unwrap();
    metrics.set_last_updated(Some(String::new()));
    processor
        .process_json(&mut metrics, "{}", &Context::at(ts("2025-01-17T09:00:00")))
        .unwrap();
    // No now at all: the current local time, written in the same form.
    let before = chrono::Local::now().naive_local();
    processor
        .process_json(&mut metrics, "{}", &Context::default())
        .unwrap();
    let after = chrono::Local::now().naive_local();

    let seen = seen.lock().unwrap();
    let pairs: Vec<(String, String)> = seen[..5]
        .iter()
        .map(|c| (c.now.to_string(), c.old_now.to_string()))
        .collect();
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        pairs,
        [
            pair("2025-01-13T10:00:00.500000", "2025-01-13T10:00:00.500000"),
            pair("2025-01-14T00:00:00", "2025-01-13T10:00:00.500000"),
            pair("2025-01-15T00:00:00", "2020-02-02T02:02:02"),
            pair("2025-01-16T09:00:00", "2025-01-16T08:00:00"),
            pair("2025-01-17T09:00:00", "2025-01-17T09:00:00"),
        ]
    );
    let now = seen[5].now.naive();
    assert!(
        before <= now && now <= after,
        "{now} not in [{before}, {after}]"
    );
    assert_eq!(seen[5].old_now.to_string(), "2025-01-17T09:00:00");
    let shown = metrics.last_updated().unwrap().into_owned();
    assert_eq!(Timestamp::parse_iso(&shown).unwrap(), seen[5].now);
}

#[test]
fn builder_lists_empty_explicit_and_one_by_one() {
    let record = r#"{"action": "train", "time_lapsed": 3, "gpu": ["NVIDIA A100"]}"#;
    let ctx = Context::at(ts("2025-01-13T10:00:00"));

    let mut empty = only("");
    let mut metrics = Metrics::new();
    empty.process_json(&mut metrics, record, &ctx).unwrap();
    assert!(metrics.is_empty());
    assert_eq!(
        metrics.to_json_string(),
        "{\n \"last_updated\": \"2025-01-13T10:00:00\"\n}\n"
    );

    let mut by_one = only("");
    by_one.add_builder(TimeMetricsBuilder::new()).unwrap();
    by_one.add_builder(LabeledMetricsBuilder::new()).unwrap();
    assert_eq!(by_one.builder_names(), ["time", "labeled"]);
    let mut a = Metrics::new();
    by_one.process_json(&mut a, record, &ctx).unwrap();
    let mut b = Metrics::new();
    only("time, labeled")
        .process_json(&mut b, record, &ctx)
        .unwrap();
    assert_eq!(a, b);
    assert_eq!(a.get("time_lapsed_today"), Some(3));

    assert_eq!(
        MetricProcessor::new().builder_names(),
        ["legacy", "comprehensive", "time", "labeled"]
    );
}

#[test]
fn time_builder_resets_on_calendar_date_not_day_number() {
    let mut p = only("time");
    let mut m = Metrics::new();
    for (now, lapsed, want) in [
        ("2025-01-15T10:00:00", 5, 5),
        ("2025-01-15T23:59:59.999999", 7, 12),
        // Same day-of-month, next month: departure 1 resets.
        ("2025-02-15T00:00:00", 11, 11),
        ("2025-02-15T12:00:00", 1, 12),
        ("2025-02-16T00:00:00", 0, 0),
    ] {
        p.process_json(
            &mut m,
            &format!("{{\"time_lapsed\": {lapsed}}}"),
            &Context::at(ts(now)),
        )
        .unwrap();
        assert_eq!(m.get("time_lapsed_today"), Some(want), "{now}");
    }
}

#[test]
fn comprehensive_status_is_inserted_once_even_for_the_word_status() {
    let mut p = only("comprehensive");
    let mut m = Metrics::new();
    p.process_json(
        &mut m,
        r#"{"network": "status", "action": "status", "version": "status", "success": true}"#,
        &Context::at(ts("2025-01-13")),
    )
    .unwrap();
    let keys: Vec<&str> = m.sorted().into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        ["network_status_action_status_version_status_status_pass_gpu_1_UNKNOWN_1"]
    );
}

#[test]
fn rtx_suffixes_and_primary_gpu_ties() {
    // Departure 3: only a TI or ADA suffix is removed.
    assert_eq!(extract_gpu_type("NVIDIA RTX TITAN"), "RTXTITAN");
    assert_eq!(extract_gpu_type("GeForce RTX 3080Ti"), "RTX3080");
    assert_eq!(extract_gpu_type("RTX 6000ADA"), "RTX6000");
    assert_eq!(extract_gpu_type("RTX TIX"), "RTXTIX");
    // Departure 4: among equally common unlisted types, the first in the job's list.
    assert_eq!(
        extract_primary_gpu(&["gpu0", "Custom Accelerator v2"]),
        "GPU0"
    );
    assert_eq!(
        extract_primary_gpu(&["Custom Accelerator v2", "gpu0"]),
        "V2"
    );
    assert_eq!(
        extract_primary_gpu(&["zeta 1x", "alpha 2x", "alpha 2x"]),
        "2X"
    );
    assert_eq!(extract_primary_gpu::<&str>(&[]), "unknown");
}

#[test]
fn label_values_are_escaped_in_keys() {
    let mut p = only("labeled");
    let mut m = Metrics::new();
    p.process_json(
        &mut m,
        r#"{"gpu": ["Weird\"GPU{x}=1,", "back\\slash 9z"], "user_error": "Line\nBreak \"Q\""}"#,
        &Context::at(ts("2025-01-13")),
    )
    .unwrap();
    let keys: Vec<&str> = m.sorted().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(
        keys.contains(&r#"tao_job_gpu_total{tao_gpu_type="WEIRD\"GPU{X}=1,"}"#),
        "{keys:?}"
    );
    assert!(
        keys.contains(&r#"tao_job_gpu_total{tao_gpu_type="9Z"}"#),
        "{keys:?}"
    );
    let job = keys
        .iter()
        .find(|k| k.starts_with("tao_job_total"))
        .unwrap();
    assert!(
        job.contains(r#"tao_primary_gpu="WEIRD\"GPU{X}=1,""#),
        "{job}"
    );
    assert!(
        job.contains(r#"tao_user_error="line\nbreak \"q\"""#),
        "{job}"
    );
    for key in keys {
        nixl_telemetry_processor::split_series(key).unwrap();
    }
}

#[test]
fn null_means_not_given_for_every_attribute() {
    let mut with_nulls = MetricProcessor::new();
    let mut without = MetricProcessor::new();
    let (mut a, mut b) = (Metrics::new(), Metrics::new());
    let ctx = Context::at(ts("2025-01-13"));
    with_nulls
        .process_json(
            &mut a,
            r#"{"version": null, "action": null, "network": null, "success": null, "user_error": null, "time_lapsed": null, "gpu": null, "client_type": null, "automl_triggered": null}"#,
            &ctx,
        )
        .unwrap();
    without.process_json(&mut b, "{}", &ctx).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.get("gpu_unknown_action_unknown"), Some(1));
}

#[test]
fn json_scalars_in_string_and_boolean_attributes() {
    let mut p = only("comprehensive,labeled");
    let mut m = Metrics::new();
    p.process_json(
        &mut m,
        r#"{"network": true, "action": -5, "version": 1.5e-7, "success": "false", "user_error": 1e16, "automl_triggered": 0, "client_type": 100000000000000000000, "gpu": []}"#,
        &Context::at(ts("2025-01-13")),
    )
    .unwrap();
    let keys: Vec<&str> = m.sorted().into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            // string attributes: rendered, then sanitised; a non-empty string is true
            "network_true_action__5_version_1_5e_07_status_pass_gpu_0_",
            // boolean attributes keep the scalar, shown lower-cased
            "tao_job_total{tao_action=\"_5\",tao_automl_triggered=\"0\",tao_client_type=\"1e_20\",tao_gpu_count=\"0\",tao_network=\"true\",tao_primary_gpu=\"unknown\",tao_status=\"pass\",tao_user_error=\"1e+16\",tao_version=\"1_5e_07\"}",
        ]
    );
}

#[test]
fn the_rendering_table_of_docs_processor_md() {
    let registry = AttributeRegistry::default();
    let rows = [
        ("true", "true"),
        ("false", "false"),
        ("42", "42"),
        ("-5", "_5"),
        ("0", "0"),
        ("1.0", "1_0"),
        ("2.5", "2_5"),
        ("-0.0", "_0_0"),
        ("0.0001", "0_0001"),
        ("1e15", "1000000000000000_0"),
        ("1e-05", "1e_05"),
        ("1.5e-7", "1_5e_07"),
        ("1e16", "1e_16"),
        ("1.5e300", "1_5e_300"),
        ("null", "unknown"),
        // Known limits of the JSON reader, as documented.
        ("100000000000000000000", "1e_20"),
        ("-0", "_0_0"),
    ];
    for (json, want) in rows {
        let text = format!("{{\"network\": {json}}}");
        let record = nixl_telemetry_processor::Record::parse(&text).unwrap();
        let data = nixl_telemetry_processor::extract_telemetry_data(&registry, &record).unwrap();
        assert_eq!(data.str("network"), Some(want), "{json}");
    }
}
