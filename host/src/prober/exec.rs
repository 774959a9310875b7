//! `exec` probes: the command runs in the container through CRI `ExecSync`, bounded by the
//! probe's timeout; exit code 0 is success.

use super::Outcome;
use crate::cri::CriClient;
use std::time::Duration;

/// Output shown in a failure message is cut here (upstream caps probe output at 10 KiB).
const MAX_OUTPUT: usize = 1024;

/// Runs `command` in `container_id` once.
pub async fn probe(
    cri: &CriClient,
    container_id: &str,
    command: &[String],
    timeout: Duration,
) -> Outcome {
    match cri.exec_sync(container_id, command.to_vec(), timeout).await {
        Ok(response) if response.exit_code == 0 => Outcome::Success,
        Ok(response) => Outcome::Failure(format!(
            "command {command:?} exited with {}: {}",
            response.exit_code,
            output(&response.stdout, &response.stderr)
        )),
        Err(error) if error.is_timeout() || error.to_string().contains("deadline exceeded") => {
            Outcome::Failure(format!(
                "command {command:?} timed out after {}s",
                timeout.as_secs()
            ))
        }
        Err(error) => Outcome::Error(format!("command {command:?}: {error}")),
    }
}

/// stdout and stderr as one trimmed line for messages.
pub fn output(stdout: &[u8], stderr: &[u8]) -> String {
    let mut text = String::from_utf8_lossy(stdout).trim().to_string();
    let err = String::from_utf8_lossy(stderr);
    if !err.trim().is_empty() {
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str(err.trim());
    }
    if text.len() > MAX_OUTPUT {
        let mut cut = MAX_OUTPUT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}
