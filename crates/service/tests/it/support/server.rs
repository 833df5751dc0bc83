//! The service in this process, on a loopback port the kernel chooses.

use std::net::SocketAddr;
use std::thread;

use nixl_telemetry_service::{ServeError, Service, ServiceConfig, StoreUrl};

/// A running service; stopped (gracefully) when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<Result<(), ServeError>>>,
}

impl TestServer {
    /// Starts a service with `config` on 127.0.0.1, port 0.
    pub fn start(config: ServiceConfig) -> TestServer {
        TestServer::try_start(config).unwrap_or_else(|e| panic!("the service starts: {e}"))
    }

    /// Starts a service, or says why it could not.
    pub fn try_start(config: ServiceConfig) -> Result<TestServer, ServeError> {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, started) = std::sync::mpsc::channel();
        let thread = thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a tokio runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("a loopback port");
                let addr = listener.local_addr().expect("its address");
                let service = match Service::start(config).await {
                    Ok(service) => service,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return Ok(());
                    }
                };
                let _ = ready.send(Ok(addr));
                service
                    .serve(listener, async {
                        let _ = stopped.await;
                    })
                    .await
            })
        });
        match started.recv().expect("the server thread reports") {
            Ok(addr) => Ok(TestServer {
                addr,
                stop: Some(stop),
                thread: Some(thread),
            }),
            Err(e) => {
                let _ = thread.join();
                Err(e)
            }
        }
    }

    /// Stops the service: requests under way finish, the writer applies what is
    /// queued.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread
                .join()
                .expect("the server thread ends")
                .expect("the server ran without error");
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if !thread::panicking() {
            self.shut_down();
        }
    }
}

/// A configuration over `store`, any envelope time accepted, everything else by
/// default.
pub fn config(store: StoreUrl) -> ServiceConfig {
    ServiceConfig {
        store,
        // The records' envelopes are of a fixed day of the past.
        max_envelope_skew: None,
        ..ServiceConfig::default()
    }
}

/// An SQLite store in `dir`.
pub fn sqlite_in(dir: &std::path::Path) -> StoreUrl {
    format!("sqlite:{}", dir.join("metrics.db").display())
        .parse()
        .expect("an SQLite URL")
}
