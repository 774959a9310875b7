//! Views of a running node for a person at a terminal: `wasmlet get pods` (a table like
//! `kubectl get pods`, from the read-only port) and `wasmlet logs` (read from the CRI log files
//! on the node itself, as root, since the logs left the unauthenticated port).

use crate::logs::{self, LogOptions};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Why a view could not be shown.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The node did not answer, or answered with an error status: is it running, on that port?
    #[error("GET {url}: {message}")]
    Http {
        /// The URL asked for, so the port in it can be checked.
        url: String,
        /// What the HTTP client or the node said.
        message: String,
    },
    /// The node answered with something other than what the view expects (another version?).
    #[error("GET {url}: unexpected answer: {source}")]
    Decode {
        /// The URL asked for.
        url: String,
        /// Where the JSON did not fit.
        #[source]
        source: serde_json::Error,
    },
    /// The terminal (or pipe) the view is written to failed.
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
    /// The pod, container or log file is not on this node.
    #[error("{0}")]
    NotFound(String),
    /// A log file or directory could not be read (not root?).
    #[error("{path}: {source}")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// What the filesystem said.
        #[source]
        source: std::io::Error,
    },
    /// The options given cannot be served.
    #[error("{0}")]
    Options(#[from] crate::logs::OptionsError),
}

fn get(url: &str) -> Result<ureq::Response, ViewError> {
    ureq::get(url).call().map_err(|error| ViewError::Http {
        url: url.to_string(),
        message: match error {
            ureq::Error::Status(code, response) => {
                format!(
                    "{code}: {}",
                    response.into_string().unwrap_or_default().trim()
                )
            }
            other => other.to_string(),
        },
    })
}

/// The STATUS column as kubectl computes it: a waiting or terminated reason, else the phase.
pub fn display_status(pod: &Pod) -> String {
    let status = pod.status.clone().unwrap_or_default();
    if pod.metadata.deletion_timestamp.is_some() {
        return "Terminating".into();
    }
    if let Some(reason) = status.reason.clone() {
        return reason;
    }
    let reason_of = |c: &ContainerStatus| {
        let state = c.state.clone().unwrap_or_default();
        state
            .waiting
            .and_then(|w| w.reason)
            .filter(|r| r != "PodInitializing" && r != "ContainerCreating")
            .or_else(|| state.terminated.and_then(|t| t.reason))
    };
    let init = status.init_container_statuses.clone().unwrap_or_default();
    let total = init.len();
    for (i, c) in init.iter().enumerate() {
        let state = c.state.clone().unwrap_or_default();
        if state.terminated.as_ref().is_some_and(|t| t.exit_code == 0) {
            continue;
        }
        return match reason_of(c) {
            Some(reason) if state.terminated.is_none() => format!("Init:{reason}"),
            Some(_) => "Init:Error".to_string(),
            None => format!("Init:{i}/{total}"),
        };
    }
    for c in status.container_statuses.iter().flatten() {
        if let Some(reason) = reason_of(c) {
            if c.state.as_ref().is_some_and(|s| s.running.is_none()) {
                return reason;
            }
        }
    }
    status.phase.unwrap_or_else(|| "Unknown".into())
}

fn age(pod: &Pod) -> String {
    let Some(start) = pod.status.as_ref().and_then(|s| s.start_time.as_ref()) else {
        return "<unknown>".into();
    };
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let secs = (now - start.0.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// Rows of the `get pods` table.
pub fn pod_rows(pods: &[Pod]) -> Vec<[String; 7]> {
    let mut rows = vec![[
        "NAMESPACE",
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
    ]
    .map(String::from)];
    for pod in pods {
        let statuses = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default();
        let ready = statuses.iter().filter(|c| c.ready).count();
        let restarts: i32 = statuses.iter().map(|c| c.restart_count).sum();
        rows.push([
            pod.metadata.namespace.clone().unwrap_or_default(),
            pod.metadata.name.clone().unwrap_or_default(),
            format!("{ready}/{}", statuses.len()),
            display_status(pod),
            restarts.to_string(),
            age(pod),
            pod.status
                .as_ref()
                .and_then(|s| s.pod_ip.clone())
                .unwrap_or_else(|| "<none>".into()),
        ]);
    }
    rows
}

/// Prints the node's pods as a table.
pub fn get_pods(server: &str, out: &mut impl Write) -> Result<(), ViewError> {
    let url = format!("{server}/pods");
    let text = get(&url)?.into_string().map_err(|e| ViewError::Http {
        url: url.clone(),
        message: e.to_string(),
    })?;
    let list: k8s_openapi::List<Pod> =
        serde_json::from_str(&text).map_err(|source| ViewError::Decode { url, source })?;
    let rows = pod_rows(&list.items);
    let widths: Vec<usize> = (0..7)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        writeln!(out, "{}", line.join("   ").trim_end())?;
    }
    Ok(())
}

/// Where `wasmlet logs` finds a node's logs.
#[derive(Debug, Clone)]
pub struct LogSource {
    /// The node's `podLogsDir`.
    pub pod_logs_dir: PathBuf,
    /// The node's CRI socket, asked during `-f` whether the container still runs; without
    /// one (or when it does not answer), `-f` follows until the container is restarted or
    /// its pod removed.
    pub runtime_socket: Option<PathBuf>,
}

fn read_error(path: &Path) -> impl FnOnce(std::io::Error) -> ViewError + '_ {
    move |source| ViewError::Read {
        path: path.to_path_buf(),
        source,
    }
}

/// The pod's containers that have logs, by name.
fn containers_with_logs(pod_dir: &Path) -> Result<Vec<String>, ViewError> {
    let mut names: Vec<String> = std::fs::read_dir(pod_dir)
        .map_err(read_error(pod_dir))?
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| entry.file_name().to_str().map(str::to_string))
        .collect();
    names.sort();
    Ok(names)
}

/// Whether attempt `attempt` of `container` of pod `namespace/pod` still runs, as the CRI
/// says; `None` when the runtime cannot be asked.
async fn running_in_runtime(
    cri: &crate::cri::CriClient,
    namespace: &str,
    pod: &str,
    container: &str,
    attempt: u32,
) -> Option<bool> {
    use crate::cri::{api, labels};
    let selector = crate::cri::Labels::from([
        (labels::POD_NAMESPACE.to_string(), namespace.to_string()),
        (labels::POD_NAME.to_string(), pod.to_string()),
        (labels::CONTAINER_NAME.to_string(), container.to_string()),
    ]);
    let found = cri.list_containers(selector).await.ok()?;
    Some(found.iter().any(|c| {
        c.state == api::ContainerState::ContainerRunning as i32
            && c.metadata.as_ref().is_some_and(|m| m.attempt == attempt)
    }))
}

/// Streams a container's log to `out` from its CRI log file: the newest attempt, or with
/// `previous` the one before it. `container` defaults to the pod's only container with logs.
pub async fn logs(
    source: &LogSource,
    namespace: &str,
    pod: &str,
    container: Option<&str>,
    options: LogOptions,
    out: &mut impl Write,
) -> Result<(), ViewError> {
    options.validate()?;
    let root = &source.pod_logs_dir;
    let pod_dir = logs::find_pod_log_dir(root, namespace, pod)
        .map_err(read_error(root))?
        .ok_or_else(|| {
            ViewError::NotFound(format!(
                "pod {namespace}/{pod} not found: no logs under {}",
                root.display()
            ))
        })?;
    let container = match container {
        Some(name) => name.to_string(),
        None => match containers_with_logs(&pod_dir)?.as_slice() {
            [only] => only.clone(),
            many => {
                return Err(ViewError::NotFound(format!(
                    "pod {pod} has several containers; choose one with -c: {}",
                    many.join(", ")
                )))
            }
        },
    };
    let container_dir = pod_dir.join(&container);
    let attempts = logs::attempts(&container_dir).map_err(|_| {
        ViewError::NotFound(format!(
            "container {container:?} in pod {namespace}/{pod} not found"
        ))
    })?;
    let (attempt, earlier) = match attempts.split_last() {
        Some((last, earlier)) => (*last, earlier),
        None => {
            return Err(ViewError::NotFound(format!(
                "container {container:?} in pod {namespace}/{pod} has no log yet"
            )))
        }
    };
    let attempt = if options.previous {
        *earlier.last().ok_or_else(|| {
            ViewError::NotFound(format!(
                "previous terminated container {container:?} in pod {namespace}/{pod} not found"
            ))
        })?
    } else {
        attempt
    };
    let file = logs::log_file(&pod_dir, &container, attempt);
    let cri = source
        .runtime_socket
        .as_ref()
        .and_then(|socket| crate::cri::CriClient::connect(socket, Duration::from_secs(5)).ok());
    let follow_current = !options.previous;
    let (namespace, pod) = (namespace.to_string(), pod.to_string());
    let still_running = move || {
        let (cri, namespace, pod, container) = (
            cri.clone(),
            namespace.clone(),
            pod.clone(),
            container.clone(),
        );
        let (newer, pod_dir) = (
            logs::log_file(&pod_dir, &container, attempt + 1),
            pod_dir.clone(),
        );
        async move {
            if !follow_current || newer.exists() || !pod_dir.exists() {
                return false;
            }
            match &cri {
                Some(cri) => running_in_runtime(cri, &namespace, &pod, &container, attempt)
                    .await
                    .unwrap_or(true),
                None => true,
            }
        }
    };
    let mut stream = std::pin::pin!(logs::stream(file.clone(), options, still_running));
    while let Some(chunk) = stream.next().await {
        out.write_all(&chunk.map_err(read_error(&file))?)?;
        out.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateWaiting, PodStatus};

    #[test]
    fn status_column_prefers_the_waiting_reason() {
        let pod = Pod {
            status: Some(PodStatus {
                phase: Some("Running".into()),
                container_statuses: Some(vec![ContainerStatus {
                    name: "c".into(),
                    restart_count: 3,
                    state: Some(ContainerState {
                        waiting: Some(ContainerStateWaiting {
                            reason: Some("CrashLoopBackOff".into()),
                            message: None,
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(display_status(&pod), "CrashLoopBackOff");
        let rows = pod_rows(&[pod]);
        assert_eq!(rows[1][2], "0/1");
        assert_eq!(rows[1][4], "3");
    }
}
