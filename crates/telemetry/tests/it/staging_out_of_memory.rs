//! A thread whose staging queue cannot be allocated loses its events, counted,
//! instead of aborting the host.
//!
//! With the largest buffer size a queue is 3.5 GiB. The test runs itself again
//! as a child whose address space is limited to 1 GiB, where that allocation
//! fails; the child records and reports its books.

use nixl_telemetry_testsupport::child;

use nixl_telemetry::{Category, Telemetry};

const CHILD: &str = "NIXL_TELEMETRY_TEST_OOM_CHILD";

#[test]
fn a_queue_that_cannot_be_allocated_is_counted_not_an_abort() {
    if child::is_child(CHILD) {
        record_under_a_memory_limit();
        return;
    }
    let (status, said) = child::run_as_child(
        &child::test_name(
            module_path!(),
            "a_queue_that_cannot_be_allocated_is_counted_not_an_abort",
        ),
        CHILD,
    );
    assert!(status.success(), "child: {status:?}\n{said}");
    assert!(said.contains("books: recorded=2 late=2"), "{said}");
}

fn record_under_a_memory_limit() {
    let limit = libc::rlimit {
        rlim_cur: 1 << 30,
        rlim_max: 1 << 30,
    };
    // SAFETY: setrlimit reads the struct it is given; lowering our own limit
    // needs no privilege.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
    let t = Telemetry::builder("oom")
        .buffer_size(1 << 26)
        .unwrap()
        .build()
        .expect("telemetry is created: nothing of the buffer size is allocated yet");
    std::thread::scope(|s| {
        s.spawn(|| {
            t.record(Category::CUSTOM, "first", 1);
            t.record(Category::CUSTOM, "second", 2);
        });
    });
    let s = t.stats();
    println!("books: recorded={} late={}", s.recorded, s.dropped.late);
}
