//! TAO's own, unmodified client (`send_telemetry_data` of `nvidia-tao-core==6.26.3`,
//! through `metrics.report`) reports jobs to the service, and the stored metrics
//! are what the library computes for the records it posted.
//!
//! Needs the Python environment `scripts/test-service.sh` prepares (its interpreter
//! in NIXL_TELEMETRY_TAO_PYTHON); skipped with a message without it.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::support::http::request;
use crate::support::server::{config, sqlite_in, TestServer};
use nixl_telemetry_processor::{Context, MetricProcessor, Metrics, Record, Timestamp};
use nixl_telemetry_service::{ServiceConfig, Token};
use serde_json::{json, Value};

/// The password TAO's client always sends (`metrics.py`), with the user name
/// `$metricstoken`: a deployment that serves TAO's clients sets it as the token.
const TAO_CLIENT_PASSWORD: &str = "TEVUIE1FIElO";

fn tao_python(test: &str) -> Option<String> {
    let python = std::env::var("NIXL_TELEMETRY_TAO_PYTHON").ok();
    if python.is_none() {
        eprintln!(
            "SKIPPED {test}: NIXL_TELEMETRY_TAO_PYTHON is not set; `bash scripts/test-service.sh` \
             installs TAO's client (nvidia-tao-core==6.26.3) and runs this test with it"
        );
    }
    python
}

/// The jobs TAO's tools report: the arguments of `send_telemetry_data`.
fn jobs() -> Value {
    let gpus = |names: &[&str]| -> Value { names.iter().map(|n| json!({"name": n})).collect() };
    json!([
        {"network": "dino", "action": "train", "gpu_data": gpus(&["NVIDIA A100-SXM4-80GB"; 8]),
         "num_gpus": 8, "time_lapsed": 3600, "pass_status": true},
        {"network": "dino", "action": "evaluate", "gpu_data": gpus(&["NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"]),
         "num_gpus": 2, "time_lapsed": 120, "pass_status": false, "user_error": true},
        {"network": "classification_pyt", "action": "export", "gpu_data": gpus(&["NVIDIA GeForce RTX 4090"]),
         "client_type": "notebook", "automl_triggered": true},
        {"network": "ResNet-50 (v2)", "action": "inference", "gpu_data": gpus(&["Tesla V100-PCIE-32GB", "Tesla T4"]),
         "num_gpus": 1, "time_lapsed": 0, "pass_status": true, "client_type": "api"},
        {"network": "segformer", "action": "train", "gpu_data": gpus(&["NVIDIA H200", "NVIDIA H200", "NVIDIA B200"]),
         "num_gpus": 3, "time_lapsed": 86400, "pass_status": true, "automl_triggered": false},
        {"network": "dino", "action": "train", "gpu_data": gpus(&["NVIDIA A100-SXM4-80GB"; 8]),
         "num_gpus": 8, "time_lapsed": 1800, "pass_status": true},
    ])
}

/// Runs TAO's client against `server` and returns what it posted.
fn report(python: &str, server: &TestServer) -> Vec<Value> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tao_client.py");
    let mut child = Command::new(python)
        .arg(&script)
        .env("TAO_TELEMETRY_SERVER", format!("http://{}", server.addr))
        .env("TAO_TOOLKIT_VERSION", "6.26.3")
        .env("TELEMETRY_TIMEOUT", "10")
        .env_remove("TELEMETRY_OPT_OUT")
        .env_remove("TAO_CLIENT_TYPE")
        .env_remove("TAO_AUTOML_TRIGGERED")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the TAO Python environment runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(jobs().to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "tao_client.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "tao_client.py's output ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn stored(server: &TestServer, token: &str) -> Value {
    request(
        server.addr,
        "GET",
        "/api/v1/metrics",
        &[("Authorization", &format!("Bearer {token}"))],
        b"",
    )
    .json()
}

#[test]
fn tao_clients_reports_are_stored_as_the_library_computes() {
    let Some(python) = tao_python("tao_clients_reports_are_stored_as_the_library_computes") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(ServiceConfig {
        token: Some(Token::new(TAO_CLIENT_PASSWORD).unwrap()),
        ..config(sqlite_in(dir.path()))
    });
    let before = Timestamp::now_local();
    let posted = report(&python, &server);
    let after = Timestamp::now_local();

    assert_eq!(posted.len(), jobs().as_array().unwrap().len());
    let mut processor = MetricProcessor::new();
    let mut expected = Metrics::new();
    for post in &posted {
        // What TAO's client sends: its URL, `$metricstoken`, no content type, 201.
        assert_eq!(
            post["url"],
            format!("http://{}/api/v1/metrics", server.addr)
        );
        assert_eq!(post["user"], "$metricstoken");
        assert_eq!(post["content_type"], Value::Null);
        assert_eq!(post["status"], 201, "{post}");
        let body = post["body"].as_str().unwrap();
        let record = Record::parse(body).unwrap();
        processor
            .process(&mut expected, &record, &Context::at(before))
            .unwrap();
    }
    let mut got = stored(&server, TAO_CLIENT_PASSWORD);
    // The service applied each record at its own time: `last_updated` is the last
    // one's, and `time_lapsed_today` sums the day (unless midnight fell in between).
    let last_updated = Timestamp::parse_iso(got["last_updated"].as_str().unwrap()).unwrap();
    assert!(
        before.naive() <= last_updated.naive() && last_updated.naive() <= after.naive(),
        "{last_updated} within [{before}, {after}]"
    );
    let mut expected: Value = serde_json::from_str(&expected.to_json_string()).unwrap();
    expected["last_updated"] = got["last_updated"].clone();
    if before.date() != after.date() {
        got["time_lapsed_today"] = expected["time_lapsed_today"].clone();
    }
    assert_eq!(got, expected);
    assert_eq!(got["total_action_train_pass"], 3);
    assert_eq!(got["gpu_nvidia_a100_sxm4_80gb_action_train"], 16);
    assert_eq!(got["version_6_26_3_action_train"], 3);
}

#[test]
fn tao_clients_reports_with_the_wrong_token_are_refused_and_not_stored() {
    let Some(python) = tao_python("tao_clients_reports_with_the_wrong_token_are_refused") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let token = "another-deployment-token";
    let server = TestServer::start(ServiceConfig {
        token: Some(Token::new(token).unwrap()),
        ..config(sqlite_in(dir.path()))
    });
    let posted = report(&python, &server);
    assert!(posted.iter().all(|p| p["status"] == 401), "{posted:?}");
    assert_eq!(stored(&server, token), json!({}));
}
