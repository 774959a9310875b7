//! Container logs as the kubelet serves them (`/containerLogs/{namespace}/{pod}/{container}`):
//! read from the CRI log files under `podLogsDir`, with `tailLines`, `sinceSeconds`,
//! `timestamps`, `previous`, `limitBytes` and `follow` meaning what they mean upstream.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncBufReadExt, AsyncSeekExt, BufReader};
use tokio::sync::mpsc;

/// Query parameters of the logs endpoint, upstream's `PodLogOptions` subset.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogOptions {
    /// `tailLines`: only the last N lines, so a long log is not sent whole.
    pub tail_lines: Option<u64>,
    /// `sinceSeconds`: only lines newer than this many seconds.
    pub since_seconds: Option<u64>,
    /// `timestamps`: keep the runtime's RFC3339Nano timestamp in front of each line.
    #[serde(default)]
    pub timestamps: bool,
    /// `previous`: the log of the container's previous instance, to see why it crashed.
    #[serde(default)]
    pub previous: bool,
    /// `follow`: keep the response open and stream new lines as they are written.
    #[serde(default)]
    pub follow: bool,
    /// `limitBytes`: stop after this many bytes.
    pub limit_bytes: Option<u64>,
}

/// One line of a CRI log file: `<RFC3339Nano> <stream> <P|F> <content>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine<'a> {
    /// When the runtime wrote the line (RFC3339Nano), used for `sinceSeconds` and `timestamps`.
    pub timestamp: &'a str,
    /// `stdout` or `stderr`.
    pub stream: &'a str,
    /// `P`: the line continues in the next entry (the runtime split a long line).
    pub partial: bool,
    /// The text, without the trailing newline.
    pub content: &'a str,
}

/// Parses one CRI log entry; `None` for a malformed line.
pub fn parse_line(line: &str) -> Option<LogLine<'_>> {
    let mut parts = line.splitn(4, ' ');
    let timestamp = parts.next()?;
    let stream = parts.next()?;
    let tag = parts.next()?;
    let content = parts.next().unwrap_or("");
    Some(LogLine {
        timestamp,
        stream,
        partial: tag.split(':').next() == Some("P"),
        content,
    })
}

fn entry_time(timestamp: &str) -> Option<SystemTime> {
    let parsed: k8s_openapi::jiff::Timestamp = timestamp.parse().ok()?;
    let nanos = parsed.as_nanosecond();
    (nanos >= 0).then(|| SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos as u64))
}

/// Joins partial entries and applies `sinceSeconds` and `timestamps`: the lines to serve.
pub fn render(text: &str, options: &LogOptions, now: SystemTime) -> Vec<String> {
    let since = options.since_seconds.map(|s| {
        now.checked_sub(Duration::from_secs(s))
            .unwrap_or(SystemTime::UNIX_EPOCH)
    });
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let Some(entry) = parse_line(line) else {
            continue;
        };
        if let (Some(since), Some(at)) = (since, entry_time(entry.timestamp)) {
            if at < since {
                continue;
            }
        }
        if pending.is_empty() && options.timestamps {
            pending.push_str(entry.timestamp);
            pending.push(' ');
        }
        pending.push_str(entry.content);
        if !entry.partial {
            out.push(std::mem::take(&mut pending));
        }
    }
    if let Some(tail) = options.tail_lines {
        let skip = out.len().saturating_sub(tail as usize);
        out.drain(..skip);
    }
    out
}

/// The log file of attempt `restart_count` of a container.
pub fn log_file(pod_log_dir: &Path, container: &str, restart_count: u32) -> PathBuf {
    pod_log_dir
        .join(container)
        .join(format!("{restart_count}.log"))
}

/// What `limitBytes` still allows.
struct Budget(u64);

impl Budget {
    /// The line with its newline, cut to what is left; `None` once nothing is.
    fn take(&mut self, line: String) -> Option<String> {
        if self.0 == 0 {
            return None;
        }
        let mut line = line + "\n";
        line.truncate(line.len().min(self.0.min(usize::MAX as u64) as usize));
        self.0 -= line.len() as u64;
        Some(line)
    }
}

/// Streams `file` into `out` as rendered lines; with `follow`, keeps reading what is appended
/// while `still_running()` says the container runs.
pub async fn stream(
    file: PathBuf,
    options: LogOptions,
    out: mpsc::Sender<String>,
    still_running: impl Fn() -> bool + Send + 'static,
) -> std::io::Result<()> {
    let text = tokio::fs::read_to_string(&file).await?;
    let mut budget = Budget(options.limit_bytes.unwrap_or(u64::MAX));
    for line in render(&text, &options, SystemTime::now()) {
        let Some(line) = budget.take(line) else {
            return Ok(());
        };
        if out.send(line).await.is_err() {
            return Ok(());
        }
    }
    if !options.follow {
        return Ok(());
    }
    let mut reader = BufReader::new(tokio::fs::File::open(&file).await?);
    reader
        .seek(std::io::SeekFrom::Start(text.len() as u64))
        .await?;
    let follow_options = LogOptions {
        tail_lines: None,
        since_seconds: None,
        ..options
    };
    let mut partial = String::new();
    let mut buffer = String::new();
    loop {
        buffer.clear();
        let read = reader.read_line(&mut buffer).await?;
        if read == 0 || !buffer.ends_with('\n') {
            partial.push_str(&buffer);
            if read == 0 && !still_running() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        partial.push_str(&buffer);
        for line in render(
            &std::mem::take(&mut partial),
            &follow_options,
            SystemTime::now(),
        ) {
            let Some(line) = budget.take(line) else {
                return Ok(());
            };
            if out.send(line).await.is_err() {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "2026-11-29T10:00:00.000000001Z stdout F one\n\
                       2026-11-29T10:00:01.000000000Z stderr F two\n\
                       2026-11-29T10:00:02.000000000Z stdout P thr\n\
                       2026-11-29T10:00:02.000000001Z stdout F ee\n";

    fn at(text: &str) -> SystemTime {
        entry_time(text).unwrap()
    }

    #[test]
    fn joins_partial_lines_and_applies_options() {
        let now = at("2026-11-29T10:00:03Z");
        assert_eq!(
            render(LOG, &LogOptions::default(), now),
            ["one", "two", "three"]
        );
        let tail = LogOptions {
            tail_lines: Some(2),
            ..Default::default()
        };
        assert_eq!(render(LOG, &tail, now), ["two", "three"]);
        let since = LogOptions {
            since_seconds: Some(2),
            ..Default::default()
        };
        assert_eq!(render(LOG, &since, now), ["two", "three"]);
        let stamps = LogOptions {
            timestamps: true,
            tail_lines: Some(1),
            ..Default::default()
        };
        assert_eq!(
            render(LOG, &stamps, now),
            ["2026-11-29T10:00:02.000000000Z three"]
        );
    }

    #[test]
    fn malformed_lines_are_skipped() {
        assert_eq!(parse_line("garbage"), None);
        assert_eq!(
            render("garbage\n", &LogOptions::default(), SystemTime::now()),
            Vec::<String>::new()
        );
    }
}
