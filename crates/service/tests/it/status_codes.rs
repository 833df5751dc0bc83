//! Every status code of the API, with the JSON body that names what was wrong.

use crate::support::http::{self, get, post, request};
use crate::support::server::{config, sqlite_in, TestServer};
use base64::Engine as _;
use nixl_telemetry_service::{ServiceConfig, Token};

const RECORD: &str = r#"{"version": "6.0.0", "action": "train", "network": "ResNet-50", "success": true, "time_lapsed": 60, "gpu": ["NVIDIA A100"]}"#;

fn server(dir: &tempfile::TempDir) -> TestServer {
    TestServer::start(config(sqlite_in(dir.path())))
}

fn assert_error(response: &http::Response, status: u16, kind: &str, says: &str) {
    assert_eq!(response.status, status, "{}", response.text());
    assert_eq!(response.header("content-type"), Some("application/json"));
    let body = response.json();
    assert_eq!(body["error"], kind, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(says), "{message:?} should say {says:?}");
}

#[test]
fn a_record_is_created_and_answered_with_its_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir);
    let response = post(server.addr, RECORD);
    assert_eq!(response.status, 201, "{}", response.text());
    let body = response.json();
    assert_eq!(body["metrics"]["total_action_train_pass"], 1);
    assert_eq!(body["metrics"]["time_lapsed_today"], 60);
    assert!(body["last_updated"].as_str().unwrap().starts_with("20"));
    let response = post(server.addr, RECORD);
    assert_eq!(response.json()["metrics"]["total_action_train_pass"], 2);
    // The map has both.
    let map = get(server.addr, "/api/v1/metrics").json();
    assert_eq!(map["total_action_train_pass"], 2);
    assert_eq!(map["network_resnet_50_action_train"], 2);
    // JSON content types are accepted too.
    for content_type in ["application/json", "application/json; charset=utf-8"] {
        let response = request(
            server.addr,
            "POST",
            "/api/v1/metrics",
            &[("Content-Type", content_type)],
            RECORD.as_bytes(),
        );
        assert_eq!(response.status, 201, "{content_type}: {}", response.text());
    }
}

#[test]
fn a_record_the_processor_rejects_is_400_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir);
    let response = post(
        server.addr,
        r#"{"action": "train", "time_lapsed": "an hour"}"#,
    );
    assert_error(
        &response,
        400,
        "bad_record",
        "key `time_lapsed` (attribute `time_lapsed`): expected a 64-bit integer",
    );
    let response = post(server.addr, r#"{"gpu": "NVIDIA A100"}"#);
    assert_error(&response, 400, "bad_record", "key `gpu` (attribute `gpus`)");
    let response = post(server.addr, r#"{"now": "yesterday", "record": {}}"#);
    assert_error(&response, 400, "bad_record", "key `now`");
    assert_eq!(get(server.addr, "/api/v1/metrics").text(), "{}\n");
}

#[test]
fn an_unknown_key_is_400_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir);
    let response = post(server.addr, r#"{"action": "train", "num_gpus": 2}"#);
    assert_error(
        &response,
        400,
        "unknown_key",
        "key `num_gpus` is not an attribute",
    );
    assert_eq!(response.json()["key"], "num_gpus");
    assert!(response.json()["message"]
        .as_str()
        .unwrap()
        .contains("version, action, network, success, user_error, time_lapsed, gpu"));
    assert_eq!(get(server.addr, "/api/v1/metrics").text(), "{}\n");
}

#[test]
fn a_registry_file_decides_which_keys_are_known() {
    let dir = tempfile::tempdir().unwrap();
    let registry = nixl_telemetry_processor::AttributeRegistry::from_toml_str(
        r#"
include_defaults = true
[[attributes]]
name = "framework"
type = "string"
default = "pytorch"
metric_order = 7
"#,
    )
    .unwrap();
    let server = TestServer::start(ServiceConfig {
        registry,
        ..config(sqlite_in(dir.path()))
    });
    let response = post(server.addr, r#"{"action": "train", "framework": "JAX"}"#);
    assert_eq!(response.status, 201, "{}", response.text());
    let map = get(server.addr, "/api/v1/metrics").json();
    assert_eq!(
        map["network_unknown_action_train_version_unknown_status_fail_framework_jax_gpu_1_UNKNOWN_1"],
        1
    );
}

#[test]
fn without_valid_credentials_it_is_401() {
    let dir = tempfile::tempdir().unwrap();
    let token = "tao-token:with-colon";
    let server = TestServer::start(ServiceConfig {
        token: Some(Token::new(token).unwrap()),
        ..config(sqlite_in(dir.path()))
    });
    let basic = |user: &str, password: &str| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        )
    };
    for (method, path) in [
        ("POST", "/api/v1/metrics"),
        ("GET", "/api/v1/metrics"),
        ("GET", "/metrics"),
    ] {
        for authorization in [
            None,
            Some(basic("$metricstoken", "wrong")),
            Some(basic("$metricstoken", "tao-token")),
            Some("Bearer wrong".to_owned()),
            Some(format!("Token {token}")),
        ] {
            let headers: Vec<(&str, &str)> = authorization
                .as_deref()
                .map(|a| vec![("Authorization", a)])
                .unwrap_or_default();
            let response = request(server.addr, method, path, &headers, RECORD.as_bytes());
            assert_error(&response, 401, "unauthorized", "HTTP Basic");
            let challenges = response.headers_named("www-authenticate");
            assert!(
                challenges.iter().any(|c| c.starts_with("Basic ")),
                "{challenges:?}"
            );
            assert!(
                challenges.iter().any(|c| c.starts_with("Bearer ")),
                "{challenges:?}"
            );
        }
    }
    assert_eq!(
        request(
            server.addr,
            "GET",
            "/api/v1/metrics",
            &[("Authorization", &format!("Bearer {token}"))],
            b""
        )
        .text(),
        "{}\n",
        "nothing was stored"
    );
    // Basic with any user name (TAO's client sends `$metricstoken`), and Bearer.
    for authorization in [
        basic("$metricstoken", token),
        basic("someone", token),
        format!("Bearer {token}"),
    ] {
        let response = request(
            server.addr,
            "POST",
            "/api/v1/metrics",
            &[("Authorization", &authorization)],
            RECORD.as_bytes(),
        );
        assert_eq!(response.status, 201, "{authorization}: {}", response.text());
    }
    let response = request(
        server.addr,
        "GET",
        "/metrics",
        &[("Authorization", &format!("Bearer {token}"))],
        b"",
    );
    assert_eq!(response.status, 200);
    assert!(response
        .text()
        .contains("tao_service_records_accepted_total 3\n"));
    assert!(response
        .text()
        .lines()
        .any(|l| l.starts_with("tao_jobs_total{action=\"train\"") && l.ends_with("} 3")));
    // The health check never asks.
    assert_eq!(get(server.addr, "/healthz").status, 200);
}

#[test]
fn unknown_paths_are_404_and_other_methods_405() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir);
    for path in ["/", "/api/v1/metric", "/api/v2/metrics", "/metrics/x"] {
        assert_error(&get(server.addr, path), 404, "not_found", path);
    }
    for (method, path, allowed) in [
        ("PUT", "/api/v1/metrics", "GET, HEAD, POST"),
        ("DELETE", "/api/v1/metrics", "GET, HEAD, POST"),
        ("POST", "/metrics", "GET, HEAD"),
        ("POST", "/healthz", "GET, HEAD"),
    ] {
        let response = request(server.addr, method, path, &[], b"{}");
        assert_error(&response, 405, "method_not_allowed", method);
        assert_eq!(response.header("allow"), Some(allowed), "{method} {path}");
    }
    assert_eq!(get(server.addr, "/api/v1/metrics").text(), "{}\n");
}

#[test]
fn a_body_over_the_limit_is_413() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir);
    let limit = nixl_telemetry_service::DEFAULT_MAX_BODY_BYTES;
    assert_eq!(limit, 64 * 1024);
    // A record padded with spaces to exactly the limit is accepted...
    let mut body = RECORD.to_owned();
    body.push_str(&" ".repeat(limit - body.len()));
    assert_eq!(post(server.addr, &body).status, 201);
    // ...one byte more is not, whether the length is announced or the body chunked.
    body.push(' ');
    assert_error(
        &post(server.addr, &body),
        413,
        "body_too_large",
        "65536 bytes",
    );
    let mut chunked = format!(
        "POST /api/v1/metrics HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
        body.len()
    )
    .into_bytes();
    chunked.extend_from_slice(body.as_bytes());
    chunked.extend_from_slice(b"\r\n0\r\n\r\n");
    let response = http::Connection::open(server.addr)
        .unwrap()
        .raw(&chunked)
        .unwrap();
    assert_error(&response, 413, "body_too_large", "65536 bytes");
    assert_eq!(
        get(server.addr, "/api/v1/metrics").json()["total_action_train_pass"],
        1
    );
}

#[test]
fn a_given_content_type_that_is_not_json_is_415() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir);
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin1",
    ] {
        let response = request(
            server.addr,
            "POST",
            "/api/v1/metrics",
            &[("Content-Type", content_type)],
            RECORD.as_bytes(),
        );
        assert_error(&response, 415, "unsupported_media_type", content_type);
    }
    assert_eq!(get(server.addr, "/api/v1/metrics").text(), "{}\n");
}

#[test]
fn healthz_says_ok_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir);
    let response = get(server.addr, "/healthz");
    assert_eq!(response.status, 200);
    assert_eq!(
        response.json(),
        serde_json::json!({"status": "ok", "store": "sqlite"})
    );
    let head = request(server.addr, "HEAD", "/healthz", &[], b"");
    assert_eq!(head.status, 200);
}

#[test]
fn a_body_that_does_not_arrive_in_time_is_408() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(ServiceConfig {
        body_timeout: std::time::Duration::from_millis(300),
        ..config(sqlite_in(dir.path()))
    });
    let mut connection = http::Connection::open(server.addr).unwrap();
    let response = connection
        .raw(b"POST /api/v1/metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 40\r\n\r\n{\"action\": ")
        .unwrap();
    assert_error(&response, 408, "request_timeout", "within 0.3 seconds");
    assert_eq!(get(server.addr, "/api/v1/metrics").text(), "{}\n");
}
