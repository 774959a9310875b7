//! Everything cadvisor reports of one cgroup in one pass: CPU time and CFS throttling, the CPU
//! and memory limits, memory, OOM kills and the creation time, for `/metrics/cadvisor`. The
//! cgroup root is a parameter ([`Hierarchies`]) so that fixture trees stand in for
//! `/sys/fs/cgroup` in tests, v1 and v2 alike.

use super::{parse_memory, CgroupMemory};
use crate::cgroups::CGROUP_ROOT;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The directories a cgroup's files are under: one per controller on cgroup v1, the unified
/// tree on v2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchies {
    v1: bool,
    memory: PathBuf,
    cpu: PathBuf,
    cpuacct: PathBuf,
}

impl Hierarchies {
    /// The hierarchies mounted under `root`: v1 when it has a memory controller directory
    /// with `memory.usage_in_bytes` (as [`super::is_v1`] decides), else v2.
    pub fn detect(root: &Path) -> Self {
        let v1 = root.join("memory/memory.usage_in_bytes").exists();
        if !v1 {
            return Hierarchies {
                v1,
                memory: root.to_path_buf(),
                cpu: root.to_path_buf(),
                cpuacct: root.to_path_buf(),
            };
        }
        // cpu and cpuacct are often co-mounted as `cpu,cpuacct`.
        let first = |names: &[&str]| {
            names
                .iter()
                .map(|name| root.join(name))
                .find(|dir| dir.is_dir())
                .unwrap_or_else(|| root.join(names[0]))
        };
        Hierarchies {
            v1,
            memory: root.join("memory"),
            cpu: first(&["cpu", "cpu,cpuacct", "cpuacct,cpu"]),
            cpuacct: first(&["cpuacct", "cpu,cpuacct", "cpuacct,cpu"]),
        }
    }

    /// The pressure stall information of `cgroup`: cgroup v2's pressure files; none on v1,
    /// which has no per-cgroup pressure.
    pub fn pressure(&self, cgroup: &str) -> crate::stats::psi::Pressure {
        if self.v1 {
            return Default::default();
        }
        crate::stats::psi::Pressure::in_dir(&self.memory.join(cgroup.trim_start_matches('/')))
    }

    /// The host's hierarchies under `/sys/fs/cgroup`.
    pub fn host() -> Self {
        Self::detect(Path::new(CGROUP_ROOT))
    }

    /// Whether these are cgroup v1 hierarchies.
    pub fn is_v1(&self) -> bool {
        self.v1
    }

    /// Whether the cgroup `cgroup` exists (in the memory hierarchy, which every pod and
    /// container cgroup has).
    pub fn exists(&self, cgroup: &str) -> bool {
        self.memory.join(cgroup.trim_start_matches('/')).is_dir()
    }

    /// A process of the cgroup `cgroup` (through which a sandbox's network namespace is
    /// found); `None` when it has none.
    pub fn first_process(&self, cgroup: &str) -> Option<u32> {
        read(
            &self.memory.join(cgroup.trim_start_matches('/')),
            "cgroup.procs",
        )?
        .lines()
        .find_map(|line| line.trim().parse().ok())
    }
}

/// CFS bandwidth counters (cadvisor's `CFS` stats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cfs {
    /// Enforcement periods that have elapsed.
    pub periods: u64,
    /// Periods in which the cgroup was throttled.
    pub throttled_periods: u64,
    /// Time spent throttled, in nanoseconds.
    pub throttled_ns: u64,
}

/// The CPU limits of a cgroup, in cadvisor's spec units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuSpec {
    /// CFS period in microseconds.
    pub period_us: u64,
    /// CFS quota in microseconds per period; 0 when unlimited (cadvisor leaves it out then).
    pub quota_us: u64,
    /// `cpu.shares` (v2: `cpu.weight` converted back to shares).
    pub shares: u64,
}

/// What one read of a cgroup gives; a field is `None` when its file is missing or broken.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CgroupSnapshot {
    /// CPU time since the cgroup was created, in nanoseconds.
    pub cpu_usage_ns: Option<u64>,
    /// CFS throttling counters.
    pub cfs: Option<Cfs>,
    /// The CPU limits.
    pub cpu_spec: Option<CpuSpec>,
    /// Usage, working set, limit, RSS and cache.
    pub memory: Option<CgroupMemory>,
    /// Processes the kernel's OOM killer killed in the cgroup (v1 `memory.oom_control`, v2
    /// `memory.events` `oom_kill`).
    pub oom_kills: Option<u64>,
    /// When the cgroup was created (its memory directory's modification time, as
    /// [`super::created`] takes it).
    pub created: Option<SystemTime>,
}

/// `key value` lines (cpu.stat, memory.events, memory.oom_control) as numbers by key.
fn field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// CFS counters from cpu.stat: v1 counts throttled time in ns, v2 in µs.
pub fn parse_cfs(v1: bool, cpu_stat: &str) -> Option<Cfs> {
    let throttled_ns = if v1 {
        field(cpu_stat, "throttled_time")?
    } else {
        field(cpu_stat, "throttled_usec")?.saturating_mul(1000)
    };
    Some(Cfs {
        periods: field(cpu_stat, "nr_periods")?,
        throttled_periods: field(cpu_stat, "nr_throttled")?,
        throttled_ns,
    })
}

/// v2 `cpu.max` (`"max 100000"` or `"50000 100000"`): (quota µs, 0 when unlimited; period µs).
pub fn parse_cpu_max(text: &str) -> Option<(u64, u64)> {
    let mut words = text.split_whitespace();
    let quota = words.next()?;
    let period = words.next()?.parse().ok()?;
    let quota = if quota == "max" {
        0
    } else {
        quota.parse().ok()?
    };
    Some((quota, period))
}

/// v1 `cpu.cfs_quota_us`: -1 is no quota, which cadvisor reports as 0.
pub fn parse_cfs_quota(text: &str) -> Option<u64> {
    let quota: i64 = text.trim().parse().ok()?;
    Some(u64::try_from(quota).unwrap_or(0))
}

/// v2 `cpu.weight` (1..10000) back to v1 shares (2..262144), the inverse of the mapping runc
/// applies to a CRI `cpu_shares`, as cadvisor converts it.
pub fn weight_to_shares(weight: u64) -> u64 {
    if weight == 0 {
        return 0;
    }
    2 + (weight - 1) * 262_142 / 9_999
}

/// A cgroup file's text. Each open makes the kernel render the file afresh, and that is most of
/// a scrape's cost: one `read` into a page-sized buffer, with no `statx` for a size hint
/// (`fs::read_to_string` asks for one) and no second `read` after a short one (the kernel
/// hands a cgroup file over whole).
fn read(dir: &Path, file: &str) -> Option<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(dir.join(file)).ok()?;
    let mut buf = vec![0u8; 4096];
    let mut len = 0;
    loop {
        let n = f.read(&mut buf[len..]).ok()?;
        len += n;
        if n == 0 || len < buf.len() {
            break;
        }
        buf.resize(buf.len() * 2, 0);
    }
    buf.truncate(len);
    String::from_utf8(buf).ok()
}

fn number(dir: &Path, file: &str) -> Option<u64> {
    read(dir, file)?.trim().parse().ok()
}

/// Reads the cgroup `cgroup` (e.g. `/kubepods/burstable/pod<uid>/<container id>`, or `/`);
/// `None` when it does not exist.
pub fn read_cgroup(h: &Hierarchies, cgroup: &str) -> Option<CgroupSnapshot> {
    let relative = cgroup.trim_start_matches('/');
    let memory_dir = h.memory.join(relative);
    let created = std::fs::metadata(&memory_dir).ok()?.modified().ok();
    let cpu_dir = h.cpu.join(relative);
    let mut snapshot = CgroupSnapshot {
        created,
        ..CgroupSnapshot::default()
    };
    let stat = read(&memory_dir, "memory.stat");
    if h.v1 {
        snapshot.cpu_usage_ns = number(&h.cpuacct.join(relative), "cpuacct.usage");
        snapshot.cpu_spec = number(&cpu_dir, "cpu.cfs_period_us").map(|period_us| CpuSpec {
            period_us,
            quota_us: read(&cpu_dir, "cpu.cfs_quota_us")
                .and_then(|q| parse_cfs_quota(&q))
                .unwrap_or(0),
            shares: number(&cpu_dir, "cpu.shares").unwrap_or(0),
        });
        // Throttling is reported only under a quota (as cAdvisor): no quota, no read.
        if snapshot.cpu_spec.is_some_and(|spec| spec.quota_us != 0) {
            snapshot.cfs = read(&cpu_dir, "cpu.stat").and_then(|s| parse_cfs(true, &s));
        }
        let usage = read(&memory_dir, "memory.usage_in_bytes");
        let limit = read(&memory_dir, "memory.limit_in_bytes");
        snapshot.memory = usage
            .zip(stat)
            .and_then(|(usage, stat)| parse_memory(true, &usage, &stat, limit.as_deref()));
        snapshot.oom_kills =
            read(&memory_dir, "memory.oom_control").and_then(|t| field(&t, "oom_kill"));
    } else {
        let cpu_stat = read(&cpu_dir, "cpu.stat");
        if let Some(cpu_stat) = &cpu_stat {
            snapshot.cpu_usage_ns =
                field(cpu_stat, "usage_usec").map(|usec| usec.saturating_mul(1000));
            snapshot.cfs = parse_cfs(false, cpu_stat);
        }
        snapshot.cpu_spec = read(&cpu_dir, "cpu.max")
            .and_then(|t| parse_cpu_max(&t))
            .map(|(quota_us, period_us)| CpuSpec {
                period_us,
                quota_us,
                shares: number(&cpu_dir, "cpu.weight").map_or(0, weight_to_shares),
            });
        let usage = read(&memory_dir, "memory.current");
        let limit = read(&memory_dir, "memory.max");
        snapshot.memory = usage
            .zip(stat)
            .and_then(|(usage, stat)| parse_memory(false, &usage, &stat, limit.as_deref()));
        snapshot.oom_kills = read(&memory_dir, "memory.events").and_then(|t| field(&t, "oom_kill"));
    }
    Some(snapshot)
}

#[cfg(test)]
pub(crate) mod tests;
