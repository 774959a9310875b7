//! Views of a running node for a person at a terminal: `wasmlet get pods` (a table like
//! `kubectl get pods`) and `wasmlet logs`, both read from the read-only port.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use std::io::Write;
use std::time::SystemTime;

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

/// Streams a container's log to `out`; `query` is the endpoint's query string.
pub fn logs(
    server: &str,
    namespace: &str,
    pod: &str,
    container: &str,
    query: &str,
    out: &mut impl Write,
) -> Result<(), ViewError> {
    let url = format!("{server}/containerLogs/{namespace}/{pod}/{container}?{query}");
    let mut reader = get(&url)?.into_reader();
    std::io::copy(&mut reader, out)?;
    Ok(())
}

/// The only container of a pod, when `logs` is not told which.
pub fn default_container(server: &str, namespace: &str, pod: &str) -> Result<String, ViewError> {
    let url = format!("{server}/pods");
    let text = get(&url)?.into_string().map_err(|e| ViewError::Http {
        url: url.clone(),
        message: e.to_string(),
    })?;
    let list: k8s_openapi::List<Pod> =
        serde_json::from_str(&text).map_err(|source| ViewError::Decode {
            url: url.clone(),
            source,
        })?;
    let found = list
        .items
        .iter()
        .find(|p| {
            p.metadata.name.as_deref() == Some(pod)
                && p.metadata.namespace.as_deref() == Some(namespace)
        })
        .ok_or_else(|| ViewError::Http {
            url: url.clone(),
            message: format!("pod {namespace}/{pod} not found"),
        })?;
    let containers = found
        .spec
        .as_ref()
        .map(|s| s.containers.clone())
        .unwrap_or_default();
    match containers.as_slice() {
        [only] => Ok(only.name.clone()),
        many => Err(ViewError::Http {
            url,
            message: format!(
                "pod {pod} has several containers; choose one with -c: {}",
                many.iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
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
