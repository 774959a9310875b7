//! Resource fit (`noderesources.Fits`): the pod's effective requests (the resource helpers'
//! `PodRequests`: the larger of the init containers and the app containers with their
//! sidecars, pod-level requests where set, plus overhead) and the requests of the active
//! pods must fit the Node's `status.allocatable`, resource by resource, and the pod count
//! must stay within `pods`.
//!
//! Quantities are summed in thousandths of a unit (the quantity parser's unit, exact) and
//! turned into upstream's units per pod: millicores for `cpu`, whole units rounded up for
//! everything else (`Quantity.Value()`). Sums saturate: no input overflows or panics.

use crate::resources::parse_milli;
use k8s_openapi::api::core::v1::{Container, Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::BTreeMap;
use std::fmt;

/// Amounts by resource name: thousandths of a unit before [`units`], upstream's units after.
type Amounts = BTreeMap<String, i128>;

/// A resource the node lacks: upstream's `InsufficientResource`, in its units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Insufficient {
    /// `cpu`, `memory`, `ephemeral-storage`, `pods` or the extended resource's name.
    pub resource: String,
    /// What the pod asks for.
    pub requested: i128,
    /// What the active pods already requested.
    pub used: i128,
    /// The node's allocatable amount.
    pub capacity: i128,
}

/// A quantity that cannot be read or is negative, with the field it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BadQuantity {
    field: String,
    problem: String,
}

impl fmt::Display for BadQuantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.problem)
    }
}

/// The largest exponent (`1e64`) read. The quantity parser refuses absurd exponents quickly
/// itself; this check stays for its message, which names the exponent the pod wrote, and no
/// real amount comes near it.
const MAX_EXPONENT: u64 = 64;

/// Whether `text` has an `e`/`E` exponent beyond [`MAX_EXPONENT`], split as the parser
/// splits a number from its suffix.
fn absurd_exponent(text: &str) -> bool {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(text.len());
    text[split..]
        .strip_prefix(['e', 'E'])
        .and_then(|exponent| exponent.parse::<i64>().ok())
        .is_some_and(|exponent| exponent.unsigned_abs() > MAX_EXPONENT)
}

fn read(field: String, quantity: &Quantity) -> Result<i128, BadQuantity> {
    if absurd_exponent(&quantity.0) {
        return Err(BadQuantity {
            field,
            problem: format!(
                "quantity {:?} has an exponent beyond {MAX_EXPONENT}",
                quantity.0
            ),
        });
    }
    match parse_milli(&quantity.0) {
        Ok(milli) if milli < 0 => Err(BadQuantity {
            field,
            problem: format!(
                "quantity {:?} must be greater than or equal to 0",
                quantity.0
            ),
        }),
        Ok(milli) => Ok(milli),
        Err(e) => Err(BadQuantity {
            field,
            problem: e.to_string(),
        }),
    }
}

fn add(into: &mut Amounts, from: &Amounts) {
    for (name, value) in from {
        let sum = into.entry(name.clone()).or_insert(0);
        *sum = sum.saturating_add(*value);
    }
}

/// Upstream's `maxResourceList`: each resource of `from` raises `into` to at least it.
fn raise(into: &mut Amounts, from: &Amounts) {
    for (name, value) in from {
        let max = into.entry(name.clone()).or_insert(*value);
        *max = (*max).max(*value);
    }
}

/// Thousandths to upstream's units: `MilliValue()` for cpu, `Value()` (rounded up) else.
fn units(name: &str, milli: i128) -> i128 {
    if name == "cpu" {
        milli
    } else {
        milli.div_euclid(1000) + i128::from(milli.rem_euclid(1000) != 0)
    }
}

fn to_units(amounts: Amounts) -> Amounts {
    amounts
        .into_iter()
        .map(|(name, milli)| {
            let value = units(&name, milli);
            (name, value)
        })
        .collect()
}

/// A resource outside the `kubernetes.io` namespace (`v1helper.IsExtendedResourceName`,
/// without its qualified-name check, which API validation makes).
fn is_extended(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// A resource the fit counts beside cpu, memory and ephemeral-storage
/// (`schedutil.IsScalarResourceName`).
fn is_scalar(name: &str) -> bool {
    is_extended(name)
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

/// What pod-level `resources` may set (`IsSupportedPodLevelResource`).
fn is_pod_level(name: &str) -> bool {
    matches!(name, "cpu" | "memory") || name.starts_with("hugepages-")
}

/// The node's `status.allocatable` in upstream's units.
pub(super) struct Allocatable(Amounts);

impl Allocatable {
    /// Reads `node.status.allocatable`; a missing resource is 0 (and a missing extended
    /// resource is one the node does not know).
    pub(super) fn of(node: &Node) -> Result<Self, BadQuantity> {
        let mut amounts = Amounts::new();
        let list = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
        for (name, quantity) in list.into_iter().flatten() {
            let milli = read(format!("status.allocatable[{name}]"), quantity)?;
            amounts.insert(name.clone(), units(name, milli));
        }
        Ok(Self(amounts))
    }

    fn get(&self, name: &str) -> i128 {
        self.0.get(name).copied().unwrap_or(0)
    }
}

/// One container's requests, defaulted from its limits as the API defaults them, with
/// `keep` deciding which resources count. Unreadable quantities go to `bad`.
fn container(
    c: &Container,
    path: &str,
    keep: &dyn Fn(&str) -> bool,
    bad: &mut Vec<BadQuantity>,
) -> Amounts {
    let resources = c.resources.as_ref();
    let explicit = resources.and_then(|r| r.requests.as_ref());
    let (requests, _) = crate::resources::requests_and_limits(resources);
    let mut amounts = Amounts::new();
    for (name, quantity) in requests.iter().filter(|(name, _)| keep(name)) {
        let list = if explicit.is_some_and(|e| e.contains_key(name)) {
            "requests"
        } else {
            "limits"
        };
        let field = format!("{path}.resources.{list}[{name}] (container {:?})", c.name);
        match read(field, quantity) {
            Ok(milli) => {
                amounts.insert(name.clone(), milli);
            }
            Err(e) => bad.push(e),
        }
    }
    amounts
}

fn list(
    from: Option<&BTreeMap<String, Quantity>>,
    path: &str,
    bad: &mut Vec<BadQuantity>,
) -> Amounts {
    let mut amounts = Amounts::new();
    for (name, quantity) in from.into_iter().flatten() {
        match read(format!("{path}[{name}]"), quantity) {
            Ok(milli) => {
                amounts.insert(name.clone(), milli);
            }
            Err(e) => bad.push(e),
        }
    }
    amounts
}

/// The pod's effective requests in thousandths (`resource.PodRequests`), counting only the
/// container requests `keep` accepts. Unreadable quantities are left out and returned.
fn requests(pod: &Pod, keep: &dyn Fn(&str) -> bool) -> (Amounts, Vec<BadQuantity>) {
    let mut bad = Vec::new();
    let Some(spec) = pod.spec.as_ref() else {
        return (Amounts::new(), bad);
    };
    let mut total = Amounts::new();
    for (i, c) in spec.containers.iter().enumerate() {
        add(
            &mut total,
            &container(c, &format!("spec.containers[{i}]"), keep, &mut bad),
        );
    }
    // Init containers run one at a time, each beside the sidecars (restartable init
    // containers) started before it; sidecars also run beside the app containers.
    let mut sidecars = Amounts::new();
    let mut init = Amounts::new();
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        let own = container(c, &format!("spec.initContainers[{i}]"), keep, &mut bad);
        if crate::podutil::is_sidecar(c) {
            add(&mut total, &own);
            add(&mut sidecars, &own);
            raise(&mut init, &sidecars);
        } else {
            let mut running = own;
            add(&mut running, &sidecars);
            raise(&mut init, &running);
        }
    }
    raise(&mut total, &init);
    // Pod-level requests replace the containers' sum where set. The API defaults a missing
    // one to the pod-level limit when no container requests that resource.
    if let Some(pod_level) = spec.resources.as_ref() {
        let requests = list(
            pod_level.requests.as_ref(),
            "spec.resources.requests",
            &mut bad,
        );
        let limits = list(pod_level.limits.as_ref(), "spec.resources.limits", &mut bad);
        let mut effective = requests;
        for (name, milli) in limits {
            if !effective.contains_key(&name) && !total.contains_key(&name) {
                effective.insert(name, milli);
            }
        }
        for (name, milli) in effective {
            if is_pod_level(&name) {
                total.insert(name, milli);
            }
        }
    }
    add(
        &mut total,
        &list(spec.overhead.as_ref(), "spec.overhead", &mut bad),
    );
    (total, bad)
}

/// The requests of the pod being admitted, in upstream's units. Extended resources the node
/// does not list are left out, as upstream's `removeMissingExtendedResources` does (they may
/// be cluster-level resources). The first unreadable quantity is an error.
pub(super) fn pod_request(pod: &Pod, allocatable: &Allocatable) -> Result<Amounts, BadQuantity> {
    let known = |name: &str| !is_extended(name) || allocatable.0.contains_key(name);
    let (amounts, bad) = requests(pod, &known);
    match bad.into_iter().next() {
        Some(first) => Err(first),
        None => Ok(to_units(amounts)),
    }
}

/// The pod's effective `cpu` (millicores) and `memory` (bytes) requests, as upstream's
/// `resource.GetResourceRequest`; an unreadable quantity counts as zero (the API server
/// validated them).
pub(crate) fn cpu_and_memory_request(pod: &Pod) -> (i128, i128) {
    let (amounts, _) = requests(pod, &|name| matches!(name, "cpu" | "memory"));
    let amounts = to_units(amounts);
    let get = |name: &str| amounts.get(name).copied().unwrap_or(0);
    (get("cpu"), get("memory"))
}

/// What the active pods requested, in upstream's units (`NodeInfo.Requested`). They were
/// admitted already, so an unreadable quantity of theirs is reported to `on_bad` and counted
/// as zero rather than held against the new pod.
pub(super) fn used_by(others: &[Pod], mut on_bad: impl FnMut(&Pod, &BadQuantity)) -> Amounts {
    let mut used = Amounts::new();
    for other in others {
        let (amounts, bad) = requests(other, &|_| true);
        for b in &bad {
            on_bad(other, b);
        }
        add(&mut used, &to_units(amounts));
    }
    used
}

/// Upstream's `fitsRequest`: every resource the node lacks, in its order (pods, cpu, memory,
/// ephemeral-storage, then the others by name).
pub(super) fn fits(
    request: &Amounts,
    other_pods: usize,
    used: &Amounts,
    allocatable: &Allocatable,
) -> Vec<Insufficient> {
    let mut lacking = Vec::new();
    let pods_used = i128::try_from(other_pods).unwrap_or(i128::MAX);
    let pods_allowed = allocatable.get("pods");
    if pods_used.saturating_add(1) > pods_allowed {
        lacking.push(Insufficient {
            resource: "pods".into(),
            requested: 1,
            used: pods_used,
            capacity: pods_allowed,
        });
    }
    let get = |name: &str| request.get(name).copied().unwrap_or(0);
    let scalars: Vec<(&String, i128)> = request
        .iter()
        .filter(|(name, _)| is_scalar(name))
        .map(|(name, value)| (name, *value))
        .collect();
    let nothing = ["cpu", "memory", "ephemeral-storage"]
        .iter()
        .all(|name| get(name) == 0);
    if nothing && scalars.is_empty() {
        return lacking;
    }
    let mut check = |name: &str, requested: i128| {
        let in_use = used.get(name).copied().unwrap_or(0);
        let capacity = allocatable.get(name);
        if requested > 0 && requested > capacity.saturating_sub(in_use) {
            lacking.push(Insufficient {
                resource: name.to_string(),
                requested,
                used: in_use,
                capacity,
            });
        }
    };
    for name in ["cpu", "memory", "ephemeral-storage"] {
        check(name, get(name));
    }
    for (name, requested) in scalars {
        check(name, requested);
    }
    lacking
}
