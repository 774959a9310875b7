//! Termination messages, as upstream's `kuberuntime_container.go`: before a container is
//! created, an empty file under `<pod dir>/containers/<name>/` is mounted at its
//! `terminationMessagePath`; once it exited, the file's content (at most 4 KiB) becomes the
//! terminated state's message, or, with `FallbackToLogsOnError` and an empty file after a
//! failure, the last 80 lines of its log (at most 2 KiB).

use crate::cri::{api, labels};
use k8s_openapi::api::core::v1::Container;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Upstream's `MaxContainerTerminationMessageLength`.
const MAX_MESSAGE_BYTES: u64 = 4 * 1024;
/// Upstream's `MaxContainerTerminationMessageLogLength` and `...LogLines`.
const MAX_LOG_BYTES: u64 = 2 * 1024;
const MAX_LOG_LINES: usize = 80;
/// The policy that falls back to the log.
const FALLBACK_TO_LOGS: &str = "FallbackToLogsOnError";

/// Creates the message file of `container` (world-writable, so a non-root container can write
/// it) and returns its mount; `None` when the container sets no path. The attempt and the
/// time keep each attempt's file apart, as upstream's random file names do.
pub fn mount(
    pod_dir: &Path,
    container: &Container,
    attempt: u32,
) -> std::io::Result<Option<api::Mount>> {
    let Some(path) = container
        .termination_message_path
        .as_deref()
        .filter(|p| !p.is_empty())
    else {
        return Ok(None);
    };
    let dir = pod_dir.join("containers").join(&container.name);
    std::fs::create_dir_all(&dir)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let file = dir.join(format!("termination-{attempt}-{nanos}"));
    std::fs::write(&file, b"")?;
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o666))?;
    Ok(Some(api::Mount {
        container_path: path.into(),
        host_path: file.display().to_string(),
        readonly: false,
        ..Default::default()
    }))
}

/// Fills the message of an exited container from its message file (or its log, per its
/// policy), unless the runtime gave one.
pub fn fill(status: &mut api::ContainerStatus) {
    if status.state != api::ContainerState::ContainerExited as i32 || !status.message.is_empty() {
        return;
    }
    let path = status
        .annotations
        .get(labels::CONTAINER_TERMINATION_MESSAGE_PATH)
        .filter(|p| !p.is_empty());
    let from_file = path
        .and_then(|p| status.mounts.iter().find(|m| &m.container_path == p))
        .and_then(|m| read_head(Path::new(&m.host_path), MAX_MESSAGE_BYTES))
        .unwrap_or_default();
    let fallback = status
        .annotations
        .get(labels::CONTAINER_TERMINATION_MESSAGE_POLICY)
        .is_some_and(|p| p == FALLBACK_TO_LOGS);
    status.message = if from_file.is_empty() && fallback && status.exit_code != 0 {
        log_tail(Path::new(&status.log_path)).unwrap_or_default()
    } else {
        from_file
    };
}

/// Up to `max` bytes from the start of `path`, as text.
fn read_head(path: &Path, max: u64) -> Option<String> {
    let mut data = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(max)
        .read_to_end(&mut data)
        .ok()?;
    Some(String::from_utf8_lossy(&data).into_owned())
}

/// The last lines of a CRI log file (`<time> <stream> <tag> <text>` each), their text only:
/// at most [`MAX_LOG_LINES`] lines and [`MAX_LOG_BYTES`] bytes, as upstream.
fn log_tail(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    // Enough of the end for 80 short lines with their CRI prefixes.
    let window = len.min(64 * 1024);
    file.seek(SeekFrom::Start(len - window)).ok()?;
    let mut data = Vec::new();
    file.read_to_end(&mut data).ok()?;
    let text = String::from_utf8_lossy(&data);
    let mut out = String::new();
    for line in text.lines().skip(usize::from(window < len)) {
        let mut fields = line.splitn(4, ' ');
        let (Some(_time), Some(_stream), Some(tag), content) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        out.push_str(content.unwrap_or(""));
        // A partial line (`P`) continues in the next record.
        if tag != "P" {
            out.push('\n');
        }
    }
    let lines: Vec<&str> = out.split_inclusive('\n').collect();
    let tail = lines[lines.len().saturating_sub(MAX_LOG_LINES)..].concat();
    let start = tail.len().saturating_sub(MAX_LOG_BYTES as usize);
    let start = (start..=tail.len())
        .find(|i| tail.is_char_boundary(*i))
        .unwrap_or(tail.len());
    Some(tail[start..].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(
        dir: &Path,
        message_file: &str,
        policy: &str,
        exit_code: i32,
    ) -> api::ContainerStatus {
        api::ContainerStatus {
            state: api::ContainerState::ContainerExited as i32,
            exit_code,
            annotations: [
                (
                    labels::CONTAINER_TERMINATION_MESSAGE_PATH.to_string(),
                    "/dev/termination-log".to_string(),
                ),
                (
                    labels::CONTAINER_TERMINATION_MESSAGE_POLICY.to_string(),
                    policy.to_string(),
                ),
            ]
            .into(),
            mounts: vec![api::Mount {
                container_path: "/dev/termination-log".into(),
                host_path: dir.join(message_file).display().to_string(),
                ..Default::default()
            }],
            log_path: dir.join("0.log").display().to_string(),
            ..Default::default()
        }
    }

    #[test]
    fn message_from_the_file_else_from_the_log_on_failure() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("msg"), "DONE").expect("write");
        std::fs::write(dir.path().join("empty"), "").expect("write");
        std::fs::write(
            dir.path().join("0.log"),
            "2026-01-01T00:00:00Z stdout F first\n2026-01-01T00:00:01Z stderr P par\n2026-01-01T00:00:01Z stderr F tial\n",
        )
        .expect("write");

        let mut from_file = exited(dir.path(), "msg", FALLBACK_TO_LOGS, 1);
        fill(&mut from_file);
        assert_eq!(from_file.message, "DONE");

        let mut from_log = exited(dir.path(), "empty", FALLBACK_TO_LOGS, 1);
        fill(&mut from_log);
        assert_eq!(from_log.message, "first\npartial\n");

        let mut succeeded = exited(dir.path(), "empty", FALLBACK_TO_LOGS, 0);
        fill(&mut succeeded);
        assert_eq!(succeeded.message, "", "no fallback after a success");

        let mut file_policy = exited(dir.path(), "empty", "File", 1);
        fill(&mut file_policy);
        assert_eq!(file_policy.message, "");
    }

    #[test]
    fn the_log_tail_is_bounded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log: String = (0..200)
            .map(|i| format!("2026-01-01T00:00:00Z stdout F line {i}\n"))
            .collect();
        std::fs::write(dir.path().join("0.log"), log).expect("write");
        let tail = log_tail(&dir.path().join("0.log")).expect("read");
        assert_eq!(tail.lines().count(), MAX_LOG_LINES);
        assert!(tail.starts_with("line 120\n") && tail.ends_with("line 199\n"));
        let long: String = (0..10)
            .map(|_| format!("2026-01-01T00:00:00Z stdout F {}\n", "x".repeat(500)))
            .collect();
        std::fs::write(dir.path().join("1.log"), long).expect("write");
        let tail = log_tail(&dir.path().join("1.log")).expect("read");
        assert_eq!(tail.len(), MAX_LOG_BYTES as usize);
    }

    #[test]
    fn mount_creates_a_writable_file_only_with_a_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let container = Container {
            name: "c".into(),
            termination_message_path: Some("/tmp/msg".into()),
            ..Default::default()
        };
        let mount = mount(dir.path(), &container, 2)
            .expect("created")
            .expect("mounted");
        assert_eq!(mount.container_path, "/tmp/msg");
        let mode = std::fs::metadata(&mount.host_path)
            .expect("stat")
            .permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o666
        );
        let none = Container {
            name: "c".into(),
            ..Default::default()
        };
        assert!(super::mount(dir.path(), &none, 0).expect("ok").is_none());
    }
}
