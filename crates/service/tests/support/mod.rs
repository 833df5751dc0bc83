//! What the service's integration tests share.
#![allow(dead_code)]

pub mod http;
pub mod postgres;
pub mod records;
pub mod server;

/// `promtool check metrics` parses the exposition: exit 0, or 3 for the naming
/// lints the reference's metric names draw (as for `process --format prometheus`).
pub fn promtool_parses(text: &str) {
    nixl_telemetry_testsupport::promtool::assert_processor_output_accepted(text);
}

/// Posts `records` in chunks of `per_client`, each chunk from a thread of its own
/// over one keep-alive connection to `addrs[chunk % addrs.len()]`; every post must
/// be answered 201.
pub fn post_from_clients(addrs: &[std::net::SocketAddr], records: &[String], per_client: usize) {
    std::thread::scope(|scope| {
        for (client, chunk) in records.chunks(per_client).enumerate() {
            let addr = addrs[client % addrs.len()];
            scope.spawn(move || {
                let mut connection = http::Connection::open(addr).unwrap();
                for record in chunk {
                    let response = connection
                        .request("POST", "/api/v1/metrics", &[], record.as_bytes())
                        .unwrap();
                    assert_eq!(response.status, 201, "{}", response.text());
                }
            });
        }
    });
}
