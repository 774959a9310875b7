//! Pressure stall information (PSI, the kernel's `Documentation/accounting/psi.rst`): the share
//! of time tasks waited for CPU, memory or I/O. The node's comes from
//! `/proc/pressure/{cpu,memory,io}`; a cgroup's from cgroup v2's `<resource>.pressure` files.
//! cgroup v1 has no per-cgroup pressure, so there only the node's is read ([`availability`]
//! says which, once, at start-up).

use super::summary::{PsiData, PsiStats};
use std::path::Path;

/// The resources PSI covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// Runnable tasks waiting for a CPU.
    Cpu,
    /// Tasks waiting on reclaim, swap-in or thrashing page cache.
    Memory,
    /// Tasks waiting on block I/O.
    Io,
}

impl Resource {
    /// The file name the kernel uses (`cpu`, `memory`, `io`).
    pub fn name(self) -> &'static str {
        match self {
            Resource::Cpu => "cpu",
            Resource::Memory => "memory",
            Resource::Io => "io",
        }
    }

    /// A cgroup v2 directory's file for it (`memory.pressure`).
    fn cgroup_file(self) -> String {
        format!("{}.pressure", self.name())
    }
}

/// Where this machine has PSI, as a sentence for the start-up log.
pub fn availability() -> &'static str {
    let node = Path::new("/proc/pressure/memory").exists();
    let cgroups = Path::new(crate::cgroups::CGROUP_ROOT)
        .join("cgroup.controllers")
        .exists();
    match (node, cgroups) {
        (true, true) => "node, pod and container pressure stall information (cgroup v2)",
        (true, false) => "node pressure stall information only: per-pod and per-container PSI needs cgroup v2, and this machine has cgroup v1",
        (false, _) => "no pressure stall information: the kernel has none (/proc/pressure is absent; boot with psi=1)",
    }
}

/// Where the kernel serves the node's PSI.
pub const NODE_PRESSURE_DIR: &str = "/proc/pressure";

/// The node's PSI for `resource`; `None` when the kernel has none.
pub fn node(resource: Resource) -> Option<PsiStats> {
    read(Path::new(NODE_PRESSURE_DIR).join(resource.name()))
}

/// The PSI of cgroup `parent` (`/kubepods/burstable/pod<uid>`) for `resource`, from cgroup
/// v2; `None` on cgroup v1 or when the cgroup is gone.
pub fn cgroup(parent: &str, resource: Resource) -> Option<PsiStats> {
    let dir = Path::new(crate::cgroups::CGROUP_ROOT).join(parent.trim_start_matches('/'));
    read(dir.join(resource.cgroup_file()))
}

/// One pressure file, parsed; `None` when it cannot be read or parsed.
fn read(path: impl AsRef<Path>) -> Option<PsiStats> {
    parse(&std::fs::read_to_string(path).ok()?).ok()
}

/// The three pressures of one cgroup (or of the node), each absent where it cannot be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pressure {
    /// CPU pressure.
    pub cpu: Option<PsiStats>,
    /// Memory pressure.
    pub memory: Option<PsiStats>,
    /// I/O pressure.
    pub io: Option<PsiStats>,
}

impl Pressure {
    /// The node's, from `/proc/pressure`.
    pub fn node() -> Self {
        Self::node_in(Path::new(NODE_PRESSURE_DIR))
    }

    /// The node's as a directory laid out as `/proc/pressure` serves them (`cpu`, `memory`,
    /// `io`): the eviction manager's `nodePressurePath`.
    pub fn node_in(dir: &Path) -> Self {
        let of = |r: Resource| read(dir.join(r.name()));
        Self {
            cpu: of(Resource::Cpu),
            memory: of(Resource::Memory),
            io: of(Resource::Io),
        }
    }

    /// A cgroup v2 directory's `<resource>.pressure` files.
    pub fn in_dir(dir: &Path) -> Self {
        let of = |r: Resource| read(dir.join(r.cgroup_file()));
        Self {
            cpu: of(Resource::Cpu),
            memory: of(Resource::Memory),
            io: of(Resource::Io),
        }
    }

    /// Each resource with its reading, in the order cAdvisor writes them.
    pub fn each(&self) -> [(Resource, Option<&PsiStats>); 3] {
        [
            (Resource::Cpu, self.cpu.as_ref()),
            (Resource::Memory, self.memory.as_ref()),
            (Resource::Io, self.io.as_ref()),
        ]
    }
}

/// Why a pressure file does not parse; each quotes the part at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PsiParseError {
    /// A line with nothing after its kind.
    #[error("pressure line {0:?} has no fields")]
    NoFields(String),
    /// A line that is neither `some` nor `full`.
    #[error("pressure line starts with {0:?}")]
    Kind(String),
    /// A line whose fields do not parse.
    #[error("pressure line {line:?}: {source}")]
    Line {
        /// The line.
        line: String,
        /// The field at fault.
        #[source]
        source: PsiFieldError,
    },
    /// No `some` line, which every kernel with PSI writes.
    #[error("no \"some\" line")]
    NoSome,
}

/// Why a field of a pressure line does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PsiFieldError {
    /// A field without `=`.
    #[error("{0:?} is not key=value")]
    NotKeyValue(String),
    /// An average that is not a number.
    #[error("{key}={value:?} is not a number")]
    Average {
        /// `avg10`, `avg60` or `avg300`.
        key: String,
        /// Its value.
        value: String,
        /// Why it does not parse.
        #[source]
        source: std::num::ParseFloatError,
    },
    /// A total that is not a whole number.
    #[error("total={value:?} is not a whole number")]
    Total {
        /// Its value.
        value: String,
        /// Why it does not parse.
        #[source]
        source: std::num::ParseIntError,
    },
}

/// Parses a pressure file: a `some` line and (since Linux 5.13 also for CPU) a `full` line of
/// `avg10=… avg60=… avg300=… total=…`. The total stays in the kernel's microseconds, as the
/// kubelet passes cAdvisor's through (the Summary API's doc says nanoseconds; its values are
/// not). A missing `full` line reads as zero, as cAdvisor reads it.
pub fn parse(text: &str) -> Result<PsiStats, PsiParseError> {
    let mut stats = PsiStats::default();
    let mut some_seen = false;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (kind, fields) = line
            .split_once(' ')
            .ok_or_else(|| PsiParseError::NoFields(line.to_string()))?;
        let slot = match kind {
            "some" => {
                some_seen = true;
                &mut stats.some
            }
            "full" => &mut stats.full,
            other => return Err(PsiParseError::Kind(other.to_string())),
        };
        *slot = data(fields).map_err(|source| PsiParseError::Line {
            line: line.to_string(),
            source,
        })?;
    }
    if !some_seen {
        return Err(PsiParseError::NoSome);
    }
    Ok(stats)
}

fn data(fields: &str) -> Result<PsiData, PsiFieldError> {
    let mut out = PsiData::default();
    for field in fields.split_whitespace() {
        let (key, value) = field
            .split_once('=')
            .ok_or_else(|| PsiFieldError::NotKeyValue(field.to_string()))?;
        let number = || {
            value
                .parse::<f64>()
                .map_err(|source| PsiFieldError::Average {
                    key: key.to_string(),
                    value: value.to_string(),
                    source,
                })
        };
        match key {
            "avg10" => out.avg10 = number()?,
            "avg60" => out.avg60 = number()?,
            "avg300" => out.avg300 = number()?,
            "total" => {
                out.total = value.parse().map_err(|source| PsiFieldError::Total {
                    value: value.to_string(),
                    source,
                })?;
            }
            // Fields a later kernel may add are not ours to refuse.
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_files_parse_with_totals_in_microseconds() {
        let text = "some avg10=15.98 avg60=12.02 avg300=11.88 total=2231233872\n\
                    full avg10=0.39 avg60=0.19 avg300=0.10 total=62662403\n";
        let stats = parse(text).expect("parses");
        assert_eq!(stats.some.avg10, 15.98);
        assert_eq!(stats.some.total, 2_231_233_872);
        assert_eq!(stats.full.avg300, 0.10);
        assert_eq!(stats.full.total, 62_662_403);
        // A kernel before 5.13 has no `full` line for CPU.
        let cpu = parse("some avg10=1.00 avg60=0.50 avg300=0.25 total=10\n").expect("parses");
        assert_eq!(cpu.full, PsiData::default());
        for bad in [
            "",
            "full avg10=1 total=2\n",
            "some avg10=x total=1\n",
            "most avg10=1\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn this_machine_reads_as_its_kernel_reports() {
        // /proc/pressure exists on every kernel these tests run on with PSI; where it does
        // not, the reading is None and the availability sentence says so.
        let present = Path::new("/proc/pressure/memory").exists();
        assert_eq!(node(Resource::Memory).is_some(), present);
        assert_eq!(availability().starts_with("no "), !present);
    }
}
