//! What the service's integration tests share.
#![allow(dead_code)]

pub mod http;
pub mod log;
pub mod postgres;
pub mod proxy;
pub mod records;
pub mod server;

/// `promtool check metrics` says nothing of the exposition: it parses, and every
/// family follows the naming conventions (help text, units, `_total`).
pub fn promtool_clean(text: &str) {
    let verdict = nixl_telemetry_testsupport::promtool::check_metrics(text);
    assert_eq!(
        (verdict.code, verdict.lines.as_slice()),
        (Some(0), &[][..]),
        "promtool check metrics on:\n{text}"
    );
}

/// The value of the sample `series` (name and labels as written) in `text`.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.parse().expect("a sample value"))
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

/// The samples of `family` in `text`: each one's labels (the inside of the braces)
/// and value.
pub fn samples<'t>(text: &'t str, family: &str) -> Vec<(&'t str, f64)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(family)?;
            let (labels, value) = match rest.strip_prefix('{') {
                Some(rest) => rest.rsplit_once("} ")?,
                None => ("", rest.strip_prefix(' ')?),
            };
            Some((labels, value.parse().expect("a sample value")))
        })
        .collect()
}

/// The value of `label` in the inside of a sample's braces.
pub fn label_value<'t>(labels: &'t str, label: &str) -> Option<&'t str> {
    let start = labels
        .match_indices(&format!("{label}=\""))
        .find(|(i, _)| *i == 0 || labels.as_bytes()[i - 1] == b',')?
        .0
        + label.len()
        + 2;
    let rest = &labels[start..];
    let mut escaped = false;
    let end = rest.char_indices().find_map(|(i, c)| {
        let end = c == '"' && !escaped;
        escaped = c == '\\' && !escaped;
        end.then_some(i)
    })?;
    Some(&rest[..end])
}
