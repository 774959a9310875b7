//! `promtool check metrics` on a metrics text, with upstream's own lint findings allowed.

/// Lint findings upstream's kubelet has too: counters it named before the `_total` rule.
const UPSTREAM_LINT: &[&str] = &[
    "kubelet_evictions counter metrics should have \"_total\" suffix",
    "kubelet_preemptions counter metrics should have \"_total\" suffix",
    "kubelet_pleg_discard_events counter metrics should have \"_total\" suffix",
];

/// Runs promtool on `text`; fails on a parse error or on any lint finding upstream lacks.
/// Without promtool the test fails under CI and says how to get it elsewhere.
pub fn promtool_check(what: &str, text: &str) {
    let child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(error) => {
            assert!(
                std::env::var("CI").is_err(),
                "promtool is missing ({error}); scripts/test.sh installs Debian's prometheus package"
            );
            eprintln!("promtool missing ({error}): {what} not linted (apt-get install prometheus)");
            return;
        }
    };
    use std::io::Write;
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(text.as_bytes()).expect("write to promtool");
    drop(stdin);
    let output = child.wait_with_output().expect("promtool ran");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let unexpected: Vec<&str> = report
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter(|line| !UPSTREAM_LINT.iter().any(|known| line.contains(known)))
        .collect();
    assert!(
        matches!(output.status.code(), Some(0) | Some(3)) && unexpected.is_empty(),
        "promtool check metrics on {what}: {:?}\n{report}\n--- text ---\n{text}",
        output.status.code()
    );
}
