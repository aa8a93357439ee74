//! [`MemoryBudget`]: how much memory the host lets all its plugins reserve together.
//!
//! A manifest's `limits.memory` caps one plugin's linear memory, but nothing else stopped a
//! manifest from asking for 4 GiB on a machine with less, or ten plugins from asking for
//! more than the machine has together. The budget is the host's answer: every deployed
//! plugin **reserves** its limit times the number of instances it runs
//! ([`reservation_of`]), and a plugin whose reservation does not fit in what the others left
//! is refused at deploy with an error naming the plugin, its limit and the budget. A
//! [`MemoryReservation`] is released when it is dropped: when the plugin is removed, or
//! when a replacement takes its place.
//!
//! A replacement is checked against what the *other* plugins reserve: while its new version
//! starts, the old one still runs (a failed replacement leaves it running), and for that
//! moment the plugin counts once, at the larger of its two reservations. So a plugin can
//! always be replaced by a version with the same limit, and raising a limit needs only the
//! difference to be free.
//!
//! **Per instance.** When plugins start on their first event (the default), a deployed
//! plugin holds no instance most of the time, so reserving every plugin's limit at deploy
//! would refuse far more plugins than ever run at once. Then a plugin is only checked at
//! deploy to fit in the whole budget ([`MemoryBudget::check`]), and each **instance**
//! reserves its limit while it lives ([`MemoryBudget::reserve_instance`], held by the
//! instance, released as it is dropped or recycled). An instantiation that finds the budget
//! full recycles the least recently used idle instances until it fits, as one that finds
//! the instance pool full does; the budget then bounds the memory of the instances alive at
//! once, which is what a machine has to hold. Plugins started as they deploy
//! (`--start-plugins on-deploy`) keep their instances, and reserve at deploy as above.
//!
//! The default budget ([`MemoryBudget::from_machine`]) is half of the memory the process may
//! use: the smaller of the machine's physical memory and the cgroup's memory limit (a
//! container's), leaving the other half to the host itself, the informers' caches and the
//! compiled code.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::plugin::manifest::{Manifest, format_bytes};

/// Instances a handler plugin runs at once. The runner keeps one instance per plugin (calls
/// into a plugin are serial); a reconciler runs one per worker ([`instances_of`]).
pub(crate) const INSTANCES_PER_PLUGIN: u64 = 1;

/// The instances a plugin runs at once: one, or a reconciler's `workers`.
pub(crate) fn instances_of(manifest: &Manifest) -> u64 {
    manifest.reconcile.as_ref().map_or(INSTANCES_PER_PLUGIN, |r| u64::from(r.workers))
}

/// The budget when the machine's memory cannot be read: 2 GiB.
pub(crate) const FALLBACK_BUDGET: u64 = 2 << 30;

/// The memory a plugin reserves from the budget: its `limits.memory` for each of its
/// instances.
pub(crate) fn reservation_of(manifest: &Manifest) -> u64 {
    manifest.limits.memory.bytes().saturating_mul(instances_of(manifest))
}

/// A plugin's reservation does not fit in what is left of the budget.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "plugin {plugin} reserves {} of memory (limits.memory {} × {instances} instance(s)), but only {} of the host's plugin memory budget of {} is free (other plugins reserve {}): lower limits.memory or raise the budget (--plugin-memory-budget)",
    format_bytes(*requested), format_bytes(*limit), format_bytes(*available), format_bytes(*total), format_bytes(total.saturating_sub(*available))
)]
pub struct BudgetExceeded {
    /// The plugin.
    pub plugin: String,
    /// Its `limits.memory`, in bytes.
    pub limit: u64,
    /// Its instances.
    pub instances: u64,
    /// What it asked to reserve, in bytes.
    pub requested: u64,
    /// What was free, in bytes.
    pub available: u64,
    /// The whole budget, in bytes.
    pub total: u64,
}

#[derive(Debug, Default)]
struct State {
    next_id: u64,
    /// Outstanding reservations by plugin: (id, bytes). A plugin has two while a
    /// replacement starts.
    by_plugin: BTreeMap<String, Vec<(u64, u64)>>,
    /// The sum over plugins of each one's largest outstanding reservation, kept as they
    /// change: a host deploying 10,000 plugins does not add up 10,000 entries per deploy.
    reserved: u64,
    /// What live instances reserve ([`MemoryBudget::reserve_instance`]): each counts.
    instances: u64,
}

/// A plugin's largest outstanding reservation.
fn largest(held: &[(u64, u64)]) -> u64 {
    held.iter().map(|(_, bytes)| *bytes).max().unwrap_or(0)
}

impl State {
    /// What plugins other than `except` reserve: each at its largest outstanding reservation.
    fn reserved_except(&self, except: Option<&str>) -> u64 {
        let own = except.and_then(|plugin| self.by_plugin.get(plugin)).map_or(0, |held| largest(held));
        self.reserved - own + self.instances
    }

    /// Changes `plugin`'s reservations with `change`, keeping the sum up to date.
    fn update(&mut self, plugin: &str, change: impl FnOnce(&mut Vec<(u64, u64)>)) {
        let held = self.by_plugin.entry(plugin.to_owned()).or_default();
        let before = largest(held);
        change(held);
        let after = largest(held);
        if held.is_empty() {
            self.by_plugin.remove(plugin);
        }
        self.reserved = self.reserved - before + after;
    }
}

#[derive(Debug)]
struct Inner {
    total: u64,
    state: Mutex<State>,
}

/// The memory all plugins of a host may reserve together. Cheap to clone; clones share the
/// reservations.
#[derive(Clone, Debug)]
pub struct MemoryBudget(Arc<Inner>);

impl MemoryBudget {
    /// A budget of `total` bytes.
    pub fn new(total: u64) -> Self {
        Self(Arc::new(Inner { total, state: Mutex::default() }))
    }

    /// A budget that refuses nothing (for embedders that bound memory another way).
    pub fn unlimited() -> Self {
        Self::new(u64::MAX)
    }

    /// The default budget: half of the memory this process may use (see the module docs).
    pub fn from_machine() -> Self {
        Self::new(default_budget(physical_memory(), cgroup_memory_limit()))
    }

    /// The whole budget, in bytes.
    pub fn total(&self) -> u64 {
        self.0.total
    }

    /// What the plugins reserve now, in bytes.
    pub fn reserved(&self) -> u64 {
        self.0.state.lock().reserved_except(None)
    }

    /// Whether `manifest`'s plugin would fit in an empty budget (what `wink check` asks).
    pub fn check(&self, manifest: &Manifest) -> Result<(), BudgetExceeded> {
        let requested = reservation_of(manifest);
        if requested > self.0.total {
            return Err(self.exceeded(manifest, requested, self.0.total));
        }
        Ok(())
    }

    /// Whether `manifest`'s plugin fits in what is left now, without reserving it: an early
    /// refusal for a caller that reserves later (while nothing is released in between, a
    /// plugin that does not fit now does not fit then).
    pub fn fits(&self, manifest: &Manifest) -> Result<(), BudgetExceeded> {
        let requested = reservation_of(manifest);
        let available = self.available_to(manifest, &self.0.state.lock());
        if requested > available {
            return Err(self.exceeded(manifest, requested, available));
        }
        Ok(())
    }

    /// Reserves `manifest`'s plugin's memory, or says why it does not fit. The plugin's own
    /// earlier reservations (the version it replaces) do not count against it.
    pub fn reserve(&self, manifest: &Manifest) -> Result<MemoryReservation, BudgetExceeded> {
        let plugin = manifest.name.as_str();
        let requested = reservation_of(manifest);
        let mut state = self.0.state.lock();
        let available = self.available_to(manifest, &state);
        if requested > available {
            return Err(self.exceeded(manifest, requested, available));
        }
        let id = state.next_id;
        state.next_id += 1;
        state.update(plugin, |held| held.push((id, requested)));
        Ok(MemoryReservation { budget: self.clone(), plugin: plugin.to_owned(), id, bytes: requested })
    }

    /// Reserves `bytes` for one instance of `plugin` while the returned reservation lives;
    /// every live instance counts, a plugin's own too. Refused when they do not fit in what
    /// is left: the caller recycles an idle instance and asks again.
    pub fn reserve_instance(&self, plugin: &str, bytes: u64) -> Result<InstanceReservation, BudgetFull> {
        let mut state = self.0.state.lock();
        let available = self.0.total.saturating_sub(state.reserved_except(None));
        if bytes > available {
            return Err(BudgetFull { plugin: plugin.to_owned(), requested: bytes, available, total: self.0.total });
        }
        state.instances += bytes;
        Ok(InstanceReservation { budget: self.clone(), bytes })
    }

    /// What `manifest`'s plugin may reserve: the total less every other plugin's reservations.
    fn available_to(&self, manifest: &Manifest, state: &State) -> u64 {
        self.0.total.saturating_sub(state.reserved_except(Some(manifest.name.as_str())))
    }

    fn exceeded(&self, manifest: &Manifest, requested: u64, available: u64) -> BudgetExceeded {
        BudgetExceeded {
            plugin: manifest.name.to_string(),
            limit: manifest.limits.memory.bytes(),
            instances: instances_of(manifest),
            requested,
            available,
            total: self.0.total,
        }
    }

    fn release(&self, plugin: &str, id: u64) {
        let mut state = self.0.state.lock();
        if state.by_plugin.contains_key(plugin) {
            state.update(plugin, |held| held.retain(|(i, _)| *i != id));
        }
    }
}

/// A plugin's share of the [`MemoryBudget`]; released when dropped.
#[derive(Debug)]
pub struct MemoryReservation {
    budget: MemoryBudget,
    plugin: String,
    id: u64,
    bytes: u64,
}

impl MemoryReservation {
    /// The reserved bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for MemoryReservation {
    fn drop(&mut self) {
        self.budget.release(&self.plugin, self.id);
    }
}

/// An instance's share of the [`MemoryBudget`]; released when dropped (with its instance).
#[derive(Debug)]
pub struct InstanceReservation {
    budget: MemoryBudget,
    bytes: u64,
}

impl Drop for InstanceReservation {
    fn drop(&mut self) {
        self.budget.0.state.lock().instances -= self.bytes;
    }
}

/// The live instances' reservations leave no room for another instance.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the plugin memory budget is full: an instance of {plugin} needs {}, {} of {} is free (live instances reserve the rest)",
    format_bytes(*requested), format_bytes(*available), format_bytes(*total)
)]
pub struct BudgetFull {
    /// The plugin.
    pub plugin: String,
    /// Its `limits.memory`, in bytes.
    pub requested: u64,
    /// What was free, in bytes.
    pub available: u64,
    /// The whole budget, in bytes.
    pub total: u64,
}

/// Half of the smaller of the physical memory and the cgroup limit; [`FALLBACK_BUDGET`]
/// when neither is known.
pub(crate) fn default_budget(physical: Option<u64>, cgroup_limit: Option<u64>) -> u64 {
    match (physical, cgroup_limit) {
        (Some(p), Some(c)) => p.min(c) / 2,
        (Some(m), None) | (None, Some(m)) => m / 2,
        (None, None) => FALLBACK_BUDGET,
    }
}

/// The machine's physical memory, in bytes.
pub(crate) fn physical_memory() -> Option<u64> {
    #[cfg(unix)]
    {
        #[allow(unsafe_code, reason = "sysconf(3) reads two system constants")]
        // SAFETY: sysconf takes an integer name and has no other preconditions.
        let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
        let pages = u64::try_from(pages).ok()?;
        let page_size = u64::try_from(page_size).ok()?;
        pages.checked_mul(page_size).filter(|b| *b > 0)
    }
    #[cfg(not(unix))]
    None
}

/// The memory limit of this process's cgroup (v2 `memory.max`, else v1
/// `memory.limit_in_bytes`), in bytes; `None` when there is none.
pub(crate) fn cgroup_memory_limit() -> Option<u64> {
    let root = Path::new("/sys/fs/cgroup");
    let own = std::fs::read_to_string("/proc/self/cgroup").ok().and_then(|text| {
        text.lines().find_map(|l| l.strip_prefix("0::")).map(|p| root.join(p.trim_start_matches('/')))
    });
    let candidates = own
        .map(|dir| dir.join("memory.max"))
        .into_iter()
        .chain([root.join("memory.max"), root.join("memory/memory.limit_in_bytes")]);
    candidates.filter_map(|path| std::fs::read_to_string(path).ok()).find_map(|text| parse_cgroup_limit(&text))
}

/// A cgroup memory limit file's value: `max` (v2) or a page-rounded `i64::MAX` (v1) mean
/// no limit.
fn parse_cgroup_limit(text: &str) -> Option<u64> {
    let value: u64 = text.trim().parse().ok()?;
    (value < (1 << 62)).then_some(value)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn manifest(name: &str, memory: &str) -> Manifest {
        let text = format!(
            "name: {name}\ncomponent: x.wasm\nresources: [{{apiVersion: v1, kind: Pod}}]\nlimits: {{memory: {memory}}}\n"
        );
        Manifest::parse(&text, Path::new("/plugins/x/plugin.yaml")).unwrap()
    }

    #[test]
    fn a_plugin_that_does_not_fit_in_what_is_left_is_refused_naming_its_limit_and_the_budget() {
        let budget = MemoryBudget::new(256 << 20);
        let a = budget.reserve(&manifest("a", "128Mi")).unwrap();
        let b = budget.reserve(&manifest("b", "64Mi")).unwrap();
        assert_eq!(budget.reserved(), 192 << 20);
        let err = budget.reserve(&manifest("c", "100Mi")).unwrap_err();
        assert_eq!((err.requested, err.available, err.total), (100 << 20, 64 << 20, 256 << 20));
        let text = err.to_string();
        for part in ["plugin c", "limits.memory 100Mi", "only 64Mi", "budget of 256Mi", "--plugin-memory-budget"] {
            assert!(text.contains(part), "`{part}` missing from: {text}");
        }
        // Removing a plugin releases its reservation.
        drop(a);
        assert_eq!(budget.reserved(), 64 << 20);
        let _c = budget.reserve(&manifest("c", "100Mi")).unwrap();
        drop(b);
        assert_eq!(budget.reserved(), 100 << 20);
    }

    #[test]
    fn a_replacement_counts_once_and_releases_the_old_reservation_when_it_goes() {
        let budget = MemoryBudget::new(256 << 20);
        let old = budget.reserve(&manifest("a", "200Mi")).unwrap();
        // The same plugin, replaced: checked against the others only, counted once.
        let new = budget.reserve(&manifest("a", "250Mi")).unwrap();
        assert_eq!(budget.reserved(), 250 << 20);
        assert!(budget.reserve(&manifest("b", "8Mi")).is_err());
        drop(old);
        assert_eq!(budget.reserved(), 250 << 20);
        drop(new);
        assert_eq!(budget.reserved(), 0);
        // A replacement that does not fit beside the others is refused; the old one stays.
        let _other = budget.reserve(&manifest("b", "128Mi")).unwrap();
        let old = budget.reserve(&manifest("a", "64Mi")).unwrap();
        assert!(budget.reserve(&manifest("a", "200Mi")).is_err());
        assert_eq!(budget.reserved(), (128 + 64) << 20);
        drop(old);
    }

    #[test]
    fn every_live_instance_reserves_its_limit_until_it_is_dropped() {
        let budget = MemoryBudget::new(256 << 20);
        let plugin = budget.reserve(&manifest("a", "64Mi")).unwrap();
        let first = budget.reserve_instance("b", 64 << 20).unwrap();
        // Two instances of one plugin (a reconciler's workers) both count.
        let second = budget.reserve_instance("b", 64 << 20).unwrap();
        assert_eq!(budget.reserved(), 192 << 20);
        let full = budget.reserve_instance("c", 100 << 20).unwrap_err();
        assert_eq!((full.requested, full.available, full.total), (100 << 20, 64 << 20, 256 << 20));
        assert!(full.to_string().contains("an instance of c needs 100Mi, 64Mi of 256Mi is free"), "{full}");
        // Deploy-time reservations see the instances' too.
        assert!(budget.reserve(&manifest("d", "100Mi")).is_err());
        drop(first);
        let _third = budget.reserve_instance("c", 100 << 20).unwrap();
        drop((second, plugin));
        assert_eq!(budget.reserved(), 100 << 20);
    }

    #[test]
    fn check_refuses_a_limit_above_the_whole_budget() {
        let budget = MemoryBudget::new(1 << 30);
        assert!(budget.check(&manifest("a", "1Gi")).is_ok());
        let err = budget.check(&manifest("big", "4Gi")).unwrap_err();
        assert!(err.to_string().contains("plugin big reserves 4Gi"), "{err}");
        assert_eq!(budget.reserved(), 0, "checking reserves nothing");
    }

    #[test]
    fn the_default_budget_is_half_of_the_smaller_of_physical_memory_and_the_cgroup_limit() {
        assert_eq!(default_budget(Some(16 << 30), None), 8 << 30);
        assert_eq!(default_budget(Some(16 << 30), Some(2 << 30)), 1 << 30);
        assert_eq!(default_budget(None, Some(2 << 30)), 1 << 30);
        assert_eq!(default_budget(None, None), FALLBACK_BUDGET);
        assert_eq!(parse_cgroup_limit("max\n"), None);
        assert_eq!(parse_cgroup_limit("9223372036854771712\n"), None);
        assert_eq!(parse_cgroup_limit("536870912\n"), Some(512 << 20));
        let machine = MemoryBudget::from_machine().total();
        assert!(machine > 0 && physical_memory().is_none_or(|p| machine <= p / 2), "{machine}");
    }
}
