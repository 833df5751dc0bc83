//! A database of its own for each test on the PostgreSQL server that
//! `scripts/test-service.sh` starts (its URL in NIXL_TELEMETRY_TEST_POSTGRES_URL).

use std::sync::atomic::{AtomicU32, Ordering};

use nixl_telemetry_service::StoreUrl;

/// The variable that holds the server's URL.
pub const POSTGRES_URL_VARIABLE: &str = "NIXL_TELEMETRY_TEST_POSTGRES_URL";

/// A fresh database, dropped with everything in it at the end.
pub struct TestDatabase {
    pub url: String,
    admin_url: String,
    name: String,
}

impl TestDatabase {
    /// Creates a database, or says on standard error why the test is skipped and
    /// returns `None` when the variable is not set.
    pub fn create(test: &str) -> Option<TestDatabase> {
        let Ok(admin_url) = std::env::var(POSTGRES_URL_VARIABLE) else {
            eprintln!(
                "SKIPPED {test}: {POSTGRES_URL_VARIABLE} is not set; `bash scripts/test-service.sh` \
                 starts a throw-away PostgreSQL and runs this test against it"
            );
            return None;
        };
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "nixl_test_{}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
        );
        let mut admin = postgres::Client::connect(&admin_url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("{POSTGRES_URL_VARIABLE}: cannot connect: {e}"));
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("CREATE DATABASE");
        Some(TestDatabase {
            url: with_database(&admin_url, &name),
            admin_url,
            name,
        })
    }

    /// The database as a store URL.
    pub fn store(&self) -> StoreUrl {
        self.url.parse().expect("a PostgreSQL URL")
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.admin_url, postgres::NoTls) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// `url` with its database replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let authority_start = base.find("://").expect("a URL with a scheme") + 3;
    let host_end = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    format!("{}/{name}{query}", &base[..host_end])
}
