//! A pod cgroup's own limits (upstream's pod container manager, `ResourceConfig` applied to
//! `/kubepods/<qos>/pod<uid>`): CPU shares, the CFS quota and the memory limit of the pod as a
//! whole, so its containers together, the sandbox included, never take more than the pod
//! declared. Written with the cgroupfs layout of cgroup v1 (one directory per controller) or
//! v2 (one unified directory).

use super::CGROUP_ROOT;
use crate::resources::CPU_PERIOD_US;
use std::io;
use std::path::{Path, PathBuf};

/// What cgroup v1 reports for a memory limit that was never set (`PAGE_COUNTER_MAX` pages);
/// anything this large is no limit.
const V1_UNLIMITED_MEMORY: i64 = 1 << 62;

/// The limits of one pod cgroup. `None` is "no limit".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodLimits {
    /// `cpu.shares` (on v2 turned into `cpu.weight`).
    pub cpu_shares: i64,
    /// The CFS quota in microseconds per [`CPU_PERIOD_US`].
    pub cpu_quota_us: Option<i64>,
    /// The memory limit in bytes.
    pub memory_bytes: Option<i64>,
}

/// The larger of two limits, no limit being the largest.
fn larger(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    Some(a?.max(b?))
}

impl PodLimits {
    /// Each limit at the larger of `self` and `other`: what a pod cgroup is given before its
    /// containers are resized, so that a parent never holds less than a child while they
    /// change (cgroup v1 refuses a child's quota above its parent's).
    pub fn at_least(&self, other: &PodLimits) -> PodLimits {
        PodLimits {
            cpu_shares: self.cpu_shares.max(other.cpu_shares),
            cpu_quota_us: larger(self.cpu_quota_us, other.cpu_quota_us),
            memory_bytes: larger(self.memory_bytes, other.memory_bytes),
        }
    }
}

/// Whether the hierarchy at `root` is cgroup v2.
pub(super) fn is_unified(root: &Path) -> bool {
    root.join("cgroup.controllers").exists()
}

/// The directory of cgroup `parent` for `controller` (v1), or the unified one (v2).
pub(super) fn dir(root: &Path, controller: &str, parent: &str) -> PathBuf {
    let relative = parent.trim_start_matches('/');
    if is_unified(root) {
        root.join(relative)
    } else {
        root.join(controller).join(relative)
    }
}

/// Writes `value` to `file` of cgroup directory `dir`; the error names both.
pub(super) fn write(dir: &Path, file: &str, value: &str) -> io::Result<()> {
    std::fs::write(dir.join(file), value).map_err(|error| {
        io::Error::new(
            error.kind(),
            format!("writing {value} to {}: {error}", dir.join(file).display()),
        )
    })
}

/// Gives the cgroup directory `cpu` (under the hierarchies at `root`) `shares`: as
/// `cpu.shares` on cgroup v1, as the `cpu.weight` they map to on v2.
pub(super) fn write_shares(root: &Path, cpu: &Path, shares: i64) -> io::Result<()> {
    if is_unified(root) {
        write(cpu, "cpu.weight", &shares_to_weight(shares).to_string())
    } else {
        write(cpu, "cpu.shares", &shares.to_string())
    }
}

/// Creates the pod cgroup `parent` (e.g. `/kubepods/burstable/pod<uid>`) where needed and
/// gives it `limits`.
pub fn set_pod_limits(parent: &str, limits: &PodLimits) -> io::Result<()> {
    set_pod_limits_at(Path::new(CGROUP_ROOT), parent, limits)
}

/// [`set_pod_limits`] under the hierarchies mounted at `root`.
pub(super) fn set_pod_limits_at(root: &Path, parent: &str, limits: &PodLimits) -> io::Result<()> {
    let cpu = dir(root, "cpu", parent);
    let memory = dir(root, "memory", parent);
    std::fs::create_dir_all(&cpu)?;
    std::fs::create_dir_all(&memory)?;
    write_shares(root, &cpu, limits.cpu_shares)?;
    if is_unified(root) {
        let quota = limits
            .cpu_quota_us
            .map_or_else(|| "max".to_string(), |q| q.to_string());
        write(&cpu, "cpu.max", &format!("{quota} {CPU_PERIOD_US}"))?;
        let memory_max = limits
            .memory_bytes
            .map_or_else(|| "max".to_string(), |m| m.to_string());
        return write(&memory, "memory.max", &memory_max);
    }
    write(&cpu, "cpu.cfs_period_us", &CPU_PERIOD_US.to_string())?;
    write(
        &cpu,
        "cpu.cfs_quota_us",
        &limits.cpu_quota_us.unwrap_or(-1).to_string(),
    )?;
    write(
        &memory,
        "memory.limit_in_bytes",
        &limits.memory_bytes.unwrap_or(-1).to_string(),
    )
}

/// The limits the pod cgroup `parent` has now; `None` when it does not exist.
pub fn pod_limits(parent: &str) -> Option<PodLimits> {
    pod_limits_at(Path::new(CGROUP_ROOT), parent)
}

/// [`pod_limits`] under the hierarchies mounted at `root`.
pub(super) fn pod_limits_at(root: &Path, parent: &str) -> Option<PodLimits> {
    let read = |dir: &Path, file: &str| std::fs::read_to_string(dir.join(file)).ok();
    let cpu = dir(root, "cpu", parent);
    let memory = dir(root, "memory", parent);
    if is_unified(root) {
        let weight: i64 = read(&cpu, "cpu.weight")?.trim().parse().ok()?;
        let max = read(&cpu, "cpu.max")?;
        let quota = max.split_whitespace().next()?;
        let memory_max = read(&memory, "memory.max")?;
        return Some(PodLimits {
            cpu_shares: weight_to_shares(weight),
            cpu_quota_us: quota.parse().ok(),
            memory_bytes: memory_max.trim().parse().ok(),
        });
    }
    let shares = read(&cpu, "cpu.shares")?.trim().parse().ok()?;
    let quota: i64 = read(&cpu, "cpu.cfs_quota_us")?.trim().parse().ok()?;
    let memory_limit: i64 = read(&memory, "memory.limit_in_bytes")?
        .trim()
        .parse()
        .ok()?;
    Some(PodLimits {
        cpu_shares: shares,
        cpu_quota_us: (quota > 0).then_some(quota),
        memory_bytes: (memory_limit < V1_UNLIMITED_MEMORY).then_some(memory_limit),
    })
}

/// Upstream's `CPUSharesToCPUWeight`.
pub(super) fn shares_to_weight(shares: i64) -> i64 {
    1 + ((shares - 2) * 9999) / 262_142
}

/// The fewest shares [`shares_to_weight`] turns into `weight` (a v2 cgroup keeps only the
/// weight).
fn weight_to_shares(weight: i64) -> i64 {
    2 + ((weight.max(1) - 1) * 262_142 + 9998) / 9999
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "/kubepods/burstable/podabc";

    fn read(path: PathBuf) -> String {
        std::fs::read_to_string(path).unwrap_or_default()
    }

    #[test]
    fn v1_pod_limits_are_written_per_controller_and_read_back() {
        let root = tempfile::tempdir().expect("temp dir");
        let limits = PodLimits {
            cpu_shares: 153,
            cpu_quota_us: Some(30_000),
            memory_bytes: Some(96 << 20),
        };
        set_pod_limits_at(root.path(), PARENT, &limits).expect("set");
        let cpu = root.path().join("cpu/kubepods/burstable/podabc");
        assert_eq!(read(cpu.join("cpu.shares")), "153");
        assert_eq!(read(cpu.join("cpu.cfs_period_us")), "100000");
        assert_eq!(read(cpu.join("cpu.cfs_quota_us")), "30000");
        let memory = root.path().join("memory/kubepods/burstable/podabc");
        assert_eq!(read(memory.join("memory.limit_in_bytes")), "100663296");
        assert_eq!(pod_limits_at(root.path(), PARENT), Some(limits));

        // No limits: -1 is written, and what the kernel then reports reads as no limit.
        let open = PodLimits {
            cpu_shares: 2,
            cpu_quota_us: None,
            memory_bytes: None,
        };
        set_pod_limits_at(root.path(), PARENT, &open).expect("set");
        assert_eq!(read(cpu.join("cpu.cfs_quota_us")), "-1");
        assert_eq!(read(memory.join("memory.limit_in_bytes")), "-1");
        std::fs::write(
            memory.join("memory.limit_in_bytes"),
            "9223372036854771712\n",
        )
        .expect("write");
        assert_eq!(pod_limits_at(root.path(), PARENT), Some(open));
        assert_eq!(pod_limits_at(root.path(), "/kubepods/podnone"), None);
    }

    #[test]
    fn v2_pod_limits_are_written_in_one_directory_and_read_back() {
        let root = tempfile::tempdir().expect("temp dir");
        std::fs::write(root.path().join("cgroup.controllers"), "cpu memory\n").expect("write");
        let limits = PodLimits {
            cpu_shares: 1024,
            cpu_quota_us: Some(50_000),
            memory_bytes: Some(64 << 20),
        };
        set_pod_limits_at(root.path(), PARENT, &limits).expect("set");
        let pod = root.path().join("kubepods/burstable/podabc");
        assert_eq!(read(pod.join("cpu.weight")), "39");
        assert_eq!(read(pod.join("cpu.max")), "50000 100000");
        assert_eq!(read(pod.join("memory.max")), "67108864");
        let back = pod_limits_at(root.path(), PARENT).expect("read");
        assert_eq!(shares_to_weight(back.cpu_shares), 39, "{back:?}");
        assert_eq!(back.cpu_quota_us, Some(50_000));
        assert_eq!(back.memory_bytes, Some(64 << 20));

        set_pod_limits_at(
            root.path(),
            PARENT,
            &PodLimits {
                cpu_shares: 2,
                cpu_quota_us: None,
                memory_bytes: None,
            },
        )
        .expect("set");
        assert_eq!(read(pod.join("cpu.max")), "max 100000");
        assert_eq!(read(pod.join("memory.max")), "max");
    }

    #[test]
    fn at_least_takes_each_larger_limit_and_no_limit_is_the_largest() {
        let small = PodLimits {
            cpu_shares: 512,
            cpu_quota_us: Some(20_000),
            memory_bytes: Some(64 << 20),
        };
        let large = PodLimits {
            cpu_shares: 256,
            cpu_quota_us: None,
            memory_bytes: Some(128 << 20),
        };
        assert_eq!(
            small.at_least(&large),
            PodLimits {
                cpu_shares: 512,
                cpu_quota_us: None,
                memory_bytes: Some(128 << 20),
            }
        );
        assert_eq!(large.at_least(&small), small.at_least(&large));
    }
}
