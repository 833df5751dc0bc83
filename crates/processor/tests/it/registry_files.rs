//! Attribute registries from TOML and JSON files: a new attribute flows into the
//! comprehensive and labeled metrics by configuration alone; invalid registries are
//! rejected with the offending entry named.

use nixl_telemetry_processor::{
    builders_from_list, AttributeDef, AttributeRegistry, AttributeType, BindError, Context,
    DefaultValue, FileError, MetricProcessor, Metrics, RegistryError, Timestamp,
    MAX_REGISTRY_BYTES,
};

const FRAMEWORK_TOML: &str = r#"
include_defaults = true

[[attributes]]
name = "framework"
raw_key = "framework"
type = "STRING"
default = "pytorch"
include_in_comprehensive = true
metric_order = 7
"#;

const FRAMEWORK_JSON: &str = r#"{
  "include_defaults": true,
  "attributes": [
    {"name": "framework", "type": "string", "default": "pytorch", "metric_order": 7}
  ]
}"#;

fn run(registry: AttributeRegistry, records: &[&str]) -> Metrics {
    let mut processor = MetricProcessor::with_registry(registry).unwrap();
    let mut metrics = Metrics::new();
    let now = Timestamp::parse_iso("2025-01-13T10:00:00").unwrap();
    for record in records {
        processor
            .process_json(&mut metrics, record, &Context::at(now))
            .unwrap();
    }
    metrics
}

#[test]
fn framework_attribute_flows_into_comprehensive_and_labeled_metrics() {
    let from_toml = AttributeRegistry::from_toml_str(FRAMEWORK_TOML).unwrap();
    let from_json = AttributeRegistry::from_json_str(FRAMEWORK_JSON).unwrap();
    assert_eq!(from_toml, from_json);
    assert_eq!(from_toml.len(), 10);
    assert_eq!(
        from_toml.get("framework"),
        Some(
            &AttributeDef::new(
                "framework",
                "framework",
                AttributeType::String,
                DefaultValue::String("pytorch".into())
            )
            .order(7)
        )
    );

    let records = [
        r#"{"action": "train", "network": "dino", "success": true, "framework": "TensorRT-LLM", "gpu": ["NVIDIA A100"]}"#,
        r#"{"action": "train", "network": "dino", "success": true, "gpu": ["NVIDIA A100"]}"#,
        r#"{"action": "train", "network": "dino", "success": true, "framework": null, "gpu": ["NVIDIA A100"]}"#,
    ];
    let metrics = run(from_toml, &records);
    // Order 7 comes after the status part (inserted before the first order >= 4).
    assert_eq!(
        metrics.get("network_dino_action_train_version_unknown_status_pass_framework_tensorrt_llm_gpu_1_NVIDIA_A100_1"),
        Some(1)
    );
    assert_eq!(
        metrics.get("network_dino_action_train_version_unknown_status_pass_framework_pytorch_gpu_1_NVIDIA_A100_1"),
        Some(2),
        "a missing key and null both take the default"
    );
    let labels = "tao_action=\"train\",tao_automl_triggered=\"false\",tao_client_type=\"container\",tao_framework=\"pytorch\",tao_gpu_count=\"1\",tao_network=\"dino\",tao_primary_gpu=\"A100\",tao_status=\"pass\",tao_user_error=\"false\",tao_version=\"unknown\"";
    assert_eq!(metrics.get(&format!("tao_job_total{{{labels}}}")), Some(2));
    assert_eq!(
        metrics.get(&format!(
            "tao_job_total{{{}}}",
            labels.replace("pytorch", "tensorrt_llm")
        )),
        Some(1)
    );
    // Legacy keys are unchanged by the new attribute.
    assert_eq!(metrics.get("network_dino_action_train"), Some(3));
}

#[test]
fn registry_files_load_by_extension() {
    let dir = tempfile_dir();
    let toml = dir.join("attrs.toml");
    let json = dir.join("attrs.json");
    let other = dir.join("attrs.yaml");
    std::fs::write(&toml, FRAMEWORK_TOML).unwrap();
    std::fs::write(&json, FRAMEWORK_JSON).unwrap();
    std::fs::write(&other, "").unwrap();
    assert_eq!(
        AttributeRegistry::from_path(&toml).unwrap(),
        AttributeRegistry::from_path(&json).unwrap()
    );
    assert!(matches!(
        AttributeRegistry::from_path(&other),
        Err(RegistryError::UnknownFormat { .. })
    ));
    assert!(matches!(
        AttributeRegistry::from_path(&dir.join("missing.toml")),
        Err(RegistryError::File(FileError::Io { .. }))
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A registry that is a device, a FIFO or an endless file is refused at once with a
/// message saying what it is, instead of filling memory or waiting for a writer.
#[test]
fn devices_fifos_and_oversized_registries_are_refused() {
    let dir = tempfile_dir();
    let zero = dir.join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let err = AttributeRegistry::from_path(&zero).unwrap_err();
    assert!(
        matches!(err, RegistryError::File(FileError::NotRegular { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains("a character device"), "{err}");

    let fifo = dir.join("fifo.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (done, waited) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || {
        let _ = done.send(
            AttributeRegistry::from_path(&path)
                .map(drop)
                .map_err(|e| e.to_string()),
        );
    });
    let result = waited
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("a FIFO registry must not block");
    let err = result.unwrap_err();
    assert!(err.contains("a FIFO, not a regular file"), "{err}");

    let big = dir.join("big.toml");
    let mut text = String::from("include_defaults = true\n");
    while text.len() as u64 <= MAX_REGISTRY_BYTES {
        text.push_str("# padding padding padding padding padding padding padding\n");
    }
    std::fs::write(&big, &text).unwrap();
    let err = AttributeRegistry::from_path(&big).unwrap_err();
    assert!(
        matches!(err, RegistryError::File(FileError::TooLarge { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains("1048576 bytes"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "nixl-processor-registry-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_full_registry_file_replaces_the_builtin_one() {
    let text = r#"
[[attributes]]
name = "action"
type = "string"
default = "unknown"
metric_order = 1

[[attributes]]
name = "success"
type = "boolean"
default = false
include_in_comprehensive = false

[[attributes]]
name = "gpus"
raw_key = "gpu"
type = "list"
default = []
include_in_comprehensive = false
"#;
    let registry = AttributeRegistry::from_toml_str(text).unwrap();
    assert_eq!(registry.len(), 3);
    // The legacy builder needs version and network: it cannot bind.
    let err = MetricProcessor::with_registry(registry.clone()).unwrap_err();
    assert!(
        matches!(
            err,
            BindError::MissingAttribute {
                attribute: "version",
                ..
            }
        ),
        "{err}"
    );
    let builders = builders_from_list("comprehensive,labeled").unwrap();
    let mut processor = MetricProcessor::with_builders(registry, builders).unwrap();
    let mut metrics = Metrics::new();
    processor
        .process_json(
            &mut metrics,
            r#"{"action": "Train", "version": "9"}"#,
            &Context::at(Timestamp::parse_iso("2025-01-13").unwrap()),
        )
        .unwrap();
    let keys: Vec<&str> = metrics.sorted().into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            "action_train_status_fail_gpu_0_",
            "tao_job_total{tao_action=\"train\",tao_gpu_count=\"0\",tao_primary_gpu=\"unknown\",tao_status=\"fail\"}",
        ]
    );
}

fn registry_error(text: &str) -> String {
    AttributeRegistry::from_toml_str(text)
        .expect_err(text)
        .to_string()
}

#[test]
fn invalid_registries_name_the_entry() {
    let cases = [
        (
            "[[attributes]]\nname = \"a\"\ntype = \"string\"\ndefault = \"x\"\n[[attributes]]\nname = \"a\"\ntype = \"integer\"\ndefault = 1\n",
            "attribute #2 (a): duplicate name `a` (first defined by attribute #1)",
        ),
        (
            "include_defaults = true\n[[attributes]]\nname = \"gpus\"\ntype = \"list\"\ndefault = []\ninclude_in_comprehensive = false\n",
            "attribute #10 (gpus): duplicate name `gpus`",
        ),
        (
            "[[attributes]]\nname = \"a\"\ntype = \"float\"\ndefault = 1.5\n",
            "attribute #1 (a): unknown type `float`",
        ),
        (
            "[[attributes]]\nname = \"a\"\ntype = \"integer\"\ndefault = \"1\"\n",
            "attribute #1 (a): default must be a 64-bit integer for a integer attribute",
        ),
        (
            "[[attributes]]\nname = \"a\"\ntype = \"boolean\"\ndefault = 0\n",
            "attribute #1 (a): default must be true or false",
        ),
        (
            "[[attributes]]\nname = \"a\"\ntype = \"list\"\ndefault = [\"x\", 1]\ninclude_in_comprehensive = false\n",
            "attribute #1 (a): default must be a list of strings",
        ),
        (
            "[[attributes]]\nname = \"a\"\ntype = \"string\"\ndefault = 5\n",
            "attribute #1 (a): default must be a string",
        ),
        (
            "[[attributes]]\nname = \"a\"\ntype = \"list\"\ndefault = []\n",
            "attribute #1 (a): a list attribute cannot be included in the comprehensive name",
        ),
        (
            "[[attributes]]\nname = \"bad-name\"\ntype = \"string\"\ndefault = \"x\"\n",
            "attribute #1 (bad-name): name `bad-name` must match",
        ),
        (
            "[[attributes]]\ntype = \"string\"\ndefault = \"x\"\n",
            "attribute #1: missing field `name`",
        ),
        (
            "[[attributes]]\nname = \"a\"\ndefault = \"x\"\n",
            "attribute #1 (a): missing field `type`",
        ),
        (
            "[[attributes]]\nname = \"a\"\ntype = \"string\"\n",
            "attribute #1 (a): missing field `default`",
        ),
        (
            "[[attributes]]\nname = \"a\"\ntype = \"string\"\ndefault = \"x\"\nordre = 3\n",
            "attribute #1 (a): unknown field `ordre`",
        ),
        (
            "[[attributes]]\nname = \"a\"\ntype = \"string\"\ndefault = \"x\"\nmetric_order = \"3\"\n",
            "attribute #1 (a): field `metric_order` must be a 64-bit integer",
        ),
        ("attribute = []\n", "unknown top-level key `attribute`"),
        ("attributes = 3\n", "`attributes` must be an array"),
        ("attributes = [\n", "not valid TOML"),
    ];
    for (text, needle) in cases {
        let message = registry_error(text);
        assert!(message.contains(needle), "{text}\n=> {message}");
    }
    let message = AttributeRegistry::from_json_str(r#"{"attributes": [{"name": "a"}]}"#)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("attribute #1 (a): missing field `type`"),
        "{message}"
    );
    assert!(AttributeRegistry::from_json_str("[]")
        .unwrap_err()
        .to_string()
        .contains("must be a table/object"));
}

#[test]
fn builders_check_the_types_they_use() {
    let registry = AttributeRegistry::from_toml_str(
        "[[attributes]]\nname = \"time_lapsed\"\ntype = \"string\"\ndefault = \"0\"\n",
    )
    .unwrap();
    let err =
        MetricProcessor::with_builders(registry, builders_from_list("time").unwrap()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "builder `time` needs attribute `time_lapsed` to be integer, the registry says string"
    );
}
