//! The process-wide registry of endpoints: one listener per address, shared by
//! every agent of the process that exports there.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::agent::AgentShared;
use crate::error::PrometheusError;
use crate::listen_backlog;
use crate::server::{self, ServerHandle};
use crate::settings::Settings;

/// The agents of one endpoint at one moment, sorted by name.
#[derive(Debug, Default)]
pub(crate) struct AgentList {
    /// Changes whenever an agent joins or leaves.
    pub(crate) version: u64,
    pub(crate) agents: Vec<Arc<AgentShared>>,
}

/// The agents an endpoint serves. Replaced as a whole on every change, so a
/// scrape holds the lock only to clone an `Arc`.
#[derive(Debug, Default)]
pub(crate) struct Directory {
    list: Mutex<Arc<AgentList>>,
}

impl Directory {
    fn lock(&self) -> MutexGuard<'_, Arc<AgentList>> {
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current agents.
    pub(crate) fn current(&self) -> Arc<AgentList> {
        Arc::clone(&self.lock())
    }

    /// Adds `agent`; `false` if an agent of that name is already there.
    fn add(&self, agent: Arc<AgentShared>) -> bool {
        let mut list = self.lock();
        let at = match list.agents.binary_search_by(|a| a.name.cmp(&agent.name)) {
            Ok(_) => return false,
            Err(at) => at,
        };
        let mut agents = list.agents.clone();
        agents.insert(at, agent);
        *list = Arc::new(AgentList {
            version: list.version + 1,
            agents,
        });
        true
    }

    /// Removes `agent` (by identity); returns how many agents remain.
    fn remove(&self, agent: &Arc<AgentShared>) -> usize {
        let mut list = self.lock();
        let agents: Vec<_> = list
            .agents
            .iter()
            .filter(|a| !Arc::ptr_eq(a, agent))
            .cloned()
            .collect();
        let remaining = agents.len();
        *list = Arc::new(AgentList {
            version: list.version + 1,
            agents,
        });
        remaining
    }
}

/// One listening address and its agents.
#[derive(Debug)]
pub(crate) struct Endpoint {
    /// The address actually bound (the port is real even if 0 was asked for).
    pub(crate) addr: SocketAddr,
    pub(crate) directory: Arc<Directory>,
    server: Mutex<Option<ServerHandle>>,
}

/// Every open endpoint of the process.
static ENDPOINTS: Mutex<Vec<Arc<Endpoint>>> = Mutex::new(Vec::new());

fn endpoints() -> MutexGuard<'static, Vec<Arc<Endpoint>>> {
    ENDPOINTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds `agent` to the endpoint for `settings.listen`, opening it if this
/// process has none there yet.
pub(crate) fn attach(
    settings: &Settings,
    agent: &Arc<AgentShared>,
) -> Result<Arc<Endpoint>, PrometheusError> {
    let mut all = endpoints();
    // Port 0 asks for a fresh port, so it never joins an existing endpoint.
    if settings.listen.port() != 0 {
        if let Some(endpoint) = all.iter().find(|e| e.addr == settings.listen) {
            if !endpoint.directory.add(Arc::clone(agent)) {
                return Err(PrometheusError::DuplicateAgent {
                    agent: agent.name.clone(),
                    addr: endpoint.addr,
                });
            }
            return Ok(Arc::clone(endpoint));
        }
    }
    let listener =
        std::net::TcpListener::bind(settings.listen).map_err(|source| PrometheusError::Bind {
            addr: settings.listen,
            source,
        })?;
    if let Err(e) = listen_backlog::deepen(&listener) {
        tracing::debug!(error = %e, "the Prometheus listener keeps the default backlog");
    }
    let addr = listener
        .local_addr()
        .map_err(|source| PrometheusError::Bind {
            addr: settings.listen,
            source,
        })?;
    let directory = Arc::new(Directory::default());
    directory.add(Arc::clone(agent));
    let server = server::spawn(listener, Arc::clone(&directory), settings.limits)
        .map_err(|source| PrometheusError::Server { addr, source })?;
    tracing::info!(address = %addr, agent = %agent.name, "serving Prometheus metrics at /metrics");
    let endpoint = Arc::new(Endpoint {
        addr,
        directory,
        server: Mutex::new(Some(server)),
    });
    all.push(Arc::clone(&endpoint));
    Ok(endpoint)
}

/// Removes `agent` from `endpoint`; the last agent to leave closes it.
pub(crate) fn detach(endpoint: &Arc<Endpoint>, agent: &Arc<AgentShared>) {
    let mut all = endpoints();
    if endpoint.directory.remove(agent) > 0 {
        return;
    }
    all.retain(|e| !Arc::ptr_eq(e, endpoint));
    let server = endpoint
        .server
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    // Stopped while the registry is held, so a new agent for this address
    // binds only once the old listener is closed.
    if let Some(server) = server {
        server.shutdown();
    }
    tracing::info!(address = %endpoint.addr, "closed the Prometheus endpoint");
}
