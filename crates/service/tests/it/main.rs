//! The service's integration tests, as one test binary (one link of the whole
//! graph instead of one per file): each module was a test file of its own.
//! Run one with a name filter, e.g.
//! `cargo test -p nixl-telemetry-service --test it status_codes`.

mod support;

mod bad_bodies_store_nothing;
mod concurrent_posts_are_exact;
mod keys_are_bounded;
mod metrics_labels_are_bounded;
mod posted_corpus_matches_process;
mod reads_are_bounded;
mod records_are_judged_alone;
mod slow_clients_are_cut_off;
mod sqlite_file_removed;
mod status_codes;
mod store_answers_are_true;
mod store_documents_move_metrics;
mod store_outage_is_503;
mod tao_client_reports;
mod tao_dashboard_on_a_real_prometheus;
