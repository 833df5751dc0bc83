//! One record listing tens of thousands of distinct GPU names: every builder's result
//! is exact, and the work grows linearly with the names (it was quadratic: 64 k names
//! took 7–17 s per builder in a release build). Speed is measured in the bench
//! (`cargo bench -p nixl-telemetry-processor --bench processor -- 1 "one record"`); the
//! bound here is only a generous guard against a quadratic step.

use std::time::{Duration, Instant};

use nixl_telemetry_processor::{
    create_gpu_identifier, extract_primary_gpu, Context, MetricProcessor, Metrics, Timestamp,
};

const DISTINCT: usize = 65_536;
/// The first names appear twice.
const REPEATED: usize = 100;

fn names() -> Vec<String> {
    let mut names: Vec<String> = (0..DISTINCT).map(|i| format!("Accel Z{i}")).collect();
    names.extend((0..REPEATED).map(|i| format!("Accel Z{i}")));
    names
}

#[test]
fn a_record_with_64k_distinct_gpu_names_is_exact_and_linear() {
    let names = names();
    let total = names.len();
    let record = serde_json::json!({
        "action": "train", "network": "net", "version": "1", "success": true,
        "time_lapsed": 10, "gpu": names,
    });
    let now = Timestamp::parse_iso("2025-01-13T10:00:00").unwrap();
    let mut processor = MetricProcessor::new();
    let mut metrics = Metrics::new();
    let started = Instant::now();
    processor
        .process_value(&mut metrics, &record, &Context::at(now))
        .unwrap();
    // Twice: the second record finds every key and every cache entry made.
    processor
        .process_value(&mut metrics, &record, &Context::at(now))
        .unwrap();
    let elapsed = started.elapsed();

    // legacy: one counter per distinct (sanitised) name, duplicates added up.
    assert_eq!(metrics.get("gpu_accel_z0_action_train"), Some(4));
    assert_eq!(metrics.get("gpu_accel_z99_action_train"), Some(4));
    assert_eq!(metrics.get("gpu_accel_z100_action_train"), Some(2));
    assert_eq!(metrics.get("gpu_accel_z65535_action_train"), Some(2));
    // labeled: one total per type, the count in the labels, the most frequent type
    // (the first of the repeated ones) as primary.
    assert_eq!(
        metrics.get("tao_job_gpu_total{tao_gpu_type=\"Z0\"}"),
        Some(4)
    );
    assert_eq!(
        metrics.get("tao_job_gpu_total{tao_gpu_type=\"Z65535\"}"),
        Some(2)
    );
    let labels = format!(
        "{{tao_action=\"train\",tao_automl_triggered=\"false\",tao_client_type=\"container\",tao_gpu_count=\"{total}\",tao_network=\"net\",tao_primary_gpu=\"Z0\",tao_status=\"pass\",tao_user_error=\"false\",tao_version=\"1\"}}"
    );
    assert_eq!(metrics.get(&format!("tao_job_total{labels}")), Some(2));
    assert_eq!(
        metrics.get(&format!("tao_job_gpu_time_sum{labels}")),
        Some(2 * 10 * total as i64)
    );
    assert_eq!(extract_primary_gpu(&names), "Z0");
    // comprehensive: one name whose identifier lists every distinct name once, in
    // code-point order, with its count.
    let identifier = create_gpu_identifier(&names);
    assert!(identifier.starts_with(&format!(
        "{total}_ACCEL_Z0_2_ACCEL_Z1_2_ACCEL_Z10_2_ACCEL_Z100_1_ACCEL_Z1000_1_"
    )));
    assert_eq!(identifier.matches("ACCEL_Z").count(), DISTINCT);
    let comprehensive = format!("network_net_action_train_version_1_status_pass_gpu_{identifier}");
    assert_eq!(metrics.get(&comprehensive), Some(2));
    let keys = metrics.len();
    assert_eq!(keys, 3 + DISTINCT + 1 + 1 + 3 + DISTINCT, "{keys} keys");

    assert!(
        elapsed < Duration::from_secs(60),
        "two records of {total} GPU names took {elapsed:?}: a step is not linear"
    );
}
