//! What a plugin's store holds, and the host side of its imports: structured logging, the
//! clock, names and labels of the current call's pods on demand, and capabilities scoped to
//! one pod for probe and hook plugins.

use crate::bindings::eviction::wasmlet::plugin::{host, pod_meta};
use crate::bindings::probe::wasmlet::plugin::pod_access;
use crate::bindings::{convert, types};
use crate::cap;
use crate::records::{PodMeta, PodScope};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The on-demand strings of the call in progress, by index. Shared, not copied, into the
/// store: a snapshot's strings cost nothing unless the plugin asks for them.
#[derive(Debug, Clone, Default)]
pub struct CallMeta {
    pub pods: Arc<Vec<PodMeta>>,
    pub image_tags: Arc<Vec<Vec<String>>>,
}

/// The data of a plugin's store.
pub struct HostState {
    pub plugin: Arc<str>,
    /// Every memory and table of the instance against one cap (`super::limiter`).
    pub limits: crate::limiter::InstanceLimiter,
    pub meta: CallMeta,
    pub scope: Option<PodScope>,
    /// The grants of the plugin's entry: `exec` is checked against them.
    grants: crate::config::Capabilities,
    /// Log events left for this call, `host.log` and stdout/stderr lines alike.
    pub log_budget: LogBudget,
    /// The plugin's WASI: deny-all plus its config's grants (`super::wasi`).
    pub wasi: WasiCtx,
    pub table: ResourceTable,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Log events a plugin may emit per call.
pub const LOG_BUDGET: u32 = 64;
/// Longest log message (or line of plugin output) the host keeps; the rest is dropped.
pub const MAX_LOG_BYTES: usize = 2048;

/// The log events left for the call in progress, shared by `host.log` and the plugin's
/// stdout/stderr streams: a chatty plugin is cut off, not failed.
#[derive(Debug, Clone)]
pub struct LogBudget(Arc<AtomicU32>);

impl LogBudget {
    pub fn new(events: u32) -> Self {
        Self(Arc::new(AtomicU32::new(events)))
    }

    /// Takes one event; `false` once the budget is spent.
    pub fn spend(&self) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(1)
            })
            .is_ok()
    }

    /// Whether an event would still be taken.
    pub fn has_left(&self) -> bool {
        self.0.load(Ordering::Acquire) > 0
    }

    /// Gives the next call a fresh budget.
    pub fn reset(&self) {
        self.0.store(LOG_BUDGET, Ordering::Release);
    }

    /// Events left (what the tests check).
    #[cfg(test)]
    pub fn left(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }
}
const MAX_BODY_BYTES: u64 = 1 << 20;
/// Most extra headers a plugin's `http-get` may send.
const MAX_REQUEST_HEADERS: usize = 64;

/// Why a `pod-access` import (`http-get`, `tcp-connect`, `exec`) refused or failed; the
/// guest gets the text as the import's `err`.
#[derive(Debug, thiserror::Error)]
enum PodAccessError {
    /// Called outside a probe or hook call.
    #[error("no pod is in scope for this call")]
    NoScope,
    /// The probe's timeout or the hook's grace is over.
    #[error("the call's deadline has passed")]
    DeadlinePassed,
    /// More extra headers than an `http-get` sends.
    #[error("{} headers asked for; at most {} are sent", .0, MAX_REQUEST_HEADERS)]
    TooManyHeaders(usize),
    /// A port the pod does not declare.
    #[error(transparent)]
    Port(#[from] crate::records::UndeclaredPort),
    /// The pod's sandbox has no address yet.
    #[error("the pod has no IP yet")]
    NoPodIp,
    /// The GET failed without an answer (a status is an answer).
    #[error("GET {url}: {source}")]
    Get {
        /// The URL asked for.
        url: String,
        /// What the HTTP client said (boxed: it is large).
        #[source]
        source: Box<ureq::Error>,
    },
    /// The answer's body could not be read.
    #[error("GET {url}: reading the body: {source}")]
    Body {
        /// The URL asked for.
        url: String,
        /// Why reading stopped.
        #[source]
        source: std::io::Error,
    },
    /// The pod's IP does not parse as an address.
    #[error("the pod IP {ip:?} is not an address")]
    PodIp {
        /// The pod's IP as reported.
        ip: String,
        /// Why it does not parse.
        #[source]
        source: std::net::AddrParseError,
    },
    /// The TCP connection failed.
    #[error("connect {addr}: {source}")]
    Connect {
        /// Where it went.
        addr: std::net::SocketAddr,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// `exec` named a container the pod does not have.
    #[error("{0:?} is not a container of this pod")]
    NotAContainer(String),
    /// `exec` in a container the plugin's `capabilities.exec` does not list.
    #[error("exec in {container:?} is not granted to plugin {plugin}: its entry needs capabilities.exec: [{container}] (or [\"*\"])")]
    ExecNotGranted {
        /// The container asked for.
        container: String,
        /// The plugin's name.
        plugin: Arc<str>,
    },
    /// The caller lent no exec (no runtime to run it on).
    #[error("exec is not available here")]
    ExecUnavailable,
    /// The host's exec failed; its own words.
    #[error("{0}")]
    Exec(String),
}

impl HostState {
    /// A store's data for `plugin`; fails when a granted directory cannot be opened.
    pub fn new(
        plugin: Arc<str>,
        limits: crate::limiter::InstanceLimiter,
        grants: &crate::config::Capabilities,
    ) -> Result<Self, crate::wasi::GrantError> {
        let log_budget = LogBudget::new(LOG_BUDGET);
        let wasi = crate::wasi::context(&plugin, grants, &log_budget)?;
        Ok(Self {
            plugin,
            limits,
            meta: CallMeta::default(),
            scope: None,
            grants: grants.clone(),
            log_budget,
            wasi,
            table: ResourceTable::new(),
        })
    }

    fn pod(&self, index: u32) -> Option<&PodMeta> {
        self.meta.pods.get(index as usize)
    }

    fn scope(&self) -> Result<&PodScope, PodAccessError> {
        self.scope.as_ref().ok_or(PodAccessError::NoScope)
    }

    fn remaining(&self, requested_ms: u32) -> Result<Duration, PodAccessError> {
        let scope = self.scope()?;
        let left = scope.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(PodAccessError::DeadlinePassed);
        }
        Ok(left.min(Duration::from_millis(u64::from(requested_ms.max(1)))))
    }

    fn http_get(
        &mut self,
        port: u16,
        path: String,
        headers: Vec<(String, String)>,
        timeout_ms: u32,
    ) -> Result<types::HttpResponse, PodAccessError> {
        if headers.len() > MAX_REQUEST_HEADERS {
            return Err(PodAccessError::TooManyHeaders(headers.len()));
        }
        let timeout = self.remaining(timeout_ms)?;
        let scope = self.scope()?;
        scope.check_port(port)?;
        if scope.pod_ip.is_empty() {
            return Err(PodAccessError::NoPodIp);
        }
        let path = if path.starts_with('/') {
            path
        } else {
            format!("/{path}")
        };
        let url = format!("http://{}:{port}{path}", scope.pod_ip);
        let agent = ureq::AgentBuilder::new()
            .timeout(timeout)
            .redirects(0)
            .build();
        let mut request = agent.get(&url);
        for (name, value) in &headers {
            request = request.set(name, value);
        }
        let response = match request.call() {
            Ok(response) => response,
            Err(ureq::Error::Status(_, response)) => response,
            Err(error) => {
                return Err(PodAccessError::Get {
                    url,
                    source: Box::new(error),
                })
            }
        };
        let status = response.status();
        let headers = response
            .headers_names()
            .into_iter()
            .filter_map(|name| {
                response
                    .header(&name)
                    .map(|v| (name.clone(), v.to_string()))
            })
            .collect();
        let mut body = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(response.into_reader(), MAX_BODY_BYTES),
            &mut body,
        )
        .map_err(|source| PodAccessError::Body { url, source })?;
        Ok(types::HttpResponse {
            status,
            headers,
            body,
        })
    }

    fn tcp_connect(&mut self, port: u16, timeout_ms: u32) -> Result<(), PodAccessError> {
        let timeout = self.remaining(timeout_ms)?;
        let scope = self.scope()?;
        scope.check_port(port)?;
        let addr: std::net::SocketAddr =
            format!("{}:{port}", scope.pod_ip)
                .parse()
                .map_err(|source| PodAccessError::PodIp {
                    ip: scope.pod_ip.clone(),
                    source,
                })?;
        std::net::TcpStream::connect_timeout(&addr, timeout)
            .map(drop)
            .map_err(|source| PodAccessError::Connect { addr, source })
    }

    fn exec(
        &mut self,
        container: String,
        command: Vec<String>,
        timeout_ms: u32,
    ) -> Result<types::ExecOutput, PodAccessError> {
        let timeout = self.remaining(timeout_ms)?;
        let scope = self.scope()?;
        if !scope.containers.contains(&container) {
            return Err(PodAccessError::NotAContainer(container));
        }
        if !self.grants.may_exec_in(&container) {
            return Err(PodAccessError::ExecNotGranted {
                container,
                plugin: self.plugin.clone(),
            });
        }
        let exec = scope.exec.clone().ok_or(PodAccessError::ExecUnavailable)?;
        exec(&container, &command, timeout)
            .map(convert::exec_output)
            .map_err(PodAccessError::Exec)
    }
}

impl types::Host for HostState {}

impl host::Host for HostState {
    fn log(&mut self, level: host::LogLevel, message: String, fields: Vec<(String, String)>) {
        if !self.log_budget.spend() {
            return;
        }
        // Sizes are the guest's to choose: keep bounded prefixes, cut on character boundaries.
        let message = cap::cap(message, MAX_LOG_BYTES);
        let fields: Vec<String> = fields
            .iter()
            .take(cap::MAX_LOG_FIELDS)
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    cap::prefix(k, cap::MAX_FIELD_KEY_BYTES),
                    cap::prefix(v, cap::MAX_FIELD_VALUE_BYTES)
                )
            })
            .collect();
        let fields = fields.join(" ");
        let plugin = &*self.plugin;
        match level {
            host::LogLevel::Trace => tracing::trace!(plugin, %fields, "{message}"),
            host::LogLevel::Debug => tracing::debug!(plugin, %fields, "{message}"),
            host::LogLevel::Info => tracing::info!(plugin, %fields, "{message}"),
            host::LogLevel::Warn => tracing::warn!(plugin, %fields, "{message}"),
            host::LogLevel::Error => tracing::error!(plugin, %fields, "{message}"),
        }
    }

    /// The same answer `log` acts on: the level passes the host's filter (the events come
    /// from this module) and the call's budget is not spent.
    fn log_enabled(&mut self, level: host::LogLevel) -> bool {
        let enabled = match level {
            host::LogLevel::Trace => tracing::enabled!(tracing::Level::TRACE),
            host::LogLevel::Debug => tracing::enabled!(tracing::Level::DEBUG),
            host::LogLevel::Info => tracing::enabled!(tracing::Level::INFO),
            host::LogLevel::Warn => tracing::enabled!(tracing::Level::WARN),
            host::LogLevel::Error => tracing::enabled!(tracing::Level::ERROR),
        };
        enabled && self.log_budget.has_left()
    }

    fn now_unix_ms(&mut self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
}

impl pod_meta::Host for HostState {
    fn pod_namespace(&mut self, index: u32) -> String {
        self.pod(index)
            .map(|p| p.namespace.clone())
            .unwrap_or_default()
    }
    fn pod_name(&mut self, index: u32) -> String {
        self.pod(index).map(|p| p.name.clone()).unwrap_or_default()
    }
    fn pod_uid(&mut self, index: u32) -> String {
        self.pod(index).map(|p| p.uid.clone()).unwrap_or_default()
    }
    fn pod_label(&mut self, index: u32, key: String) -> Option<String> {
        self.pod(index).and_then(|p| p.labels.get(&key).cloned())
    }
    fn pod_annotation(&mut self, index: u32, key: String) -> Option<String> {
        self.pod(index)
            .and_then(|p| p.annotations.get(&key).cloned())
    }
    fn image_tags(&mut self, index: u32) -> Vec<String> {
        self.meta
            .image_tags
            .get(index as usize)
            .cloned()
            .unwrap_or_default()
    }
}

/// One implementation for both worlds that import `pod-access` (probes and hooks).
impl pod_access::Host for HostState {
    fn http_get(
        &mut self,
        port: u16,
        path: String,
        headers: Vec<(String, String)>,
        timeout_ms: u32,
    ) -> Result<types::HttpResponse, String> {
        HostState::http_get(self, port, path, headers, timeout_ms).map_err(|e| e.to_string())
    }
    fn tcp_connect(&mut self, port: u16, timeout_ms: u32) -> Result<(), String> {
        HostState::tcp_connect(self, port, timeout_ms).map_err(|e| e.to_string())
    }
    fn exec(
        &mut self,
        container: String,
        command: Vec<String>,
        timeout_ms: u32,
    ) -> Result<types::ExecOutput, String> {
        HostState::exec(self, container, command, timeout_ms).map_err(|e| e.to_string())
    }
    fn sleep(&mut self, ms: u32) {
        // Never past the call's deadline: the epoch cannot interrupt a host call.
        if let Ok(wait) = self.remaining(ms) {
            std::thread::sleep(wait);
        }
    }
}
