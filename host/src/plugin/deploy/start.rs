//! When a deployed plugin's instance starts.
//!
//! By default a plugin starts on its first event: until then it holds no instance (no store,
//! no linear memory), and deploying it skips instantiation, so a host of many mostly idle
//! plugins — one per tenant, each watching its own namespace — pays for the plugins that
//! have work, not for every one deployed. With the instances recycled when idle (see
//! [`recycle`](crate::plugin::delivery::runner::recycle)), a plugin holds an instance while
//! it has work and a while after. The cost is that `init`'s errors surface with the first
//! event, under the failure policy (logged, the event retried with backoff, the plugin
//! quarantined after repeated failures), not as a deploy error; `wink check` still runs
//! `init` ahead of time.
//!
//! A host that wants every plugin checked as it deploys starts them so instead
//! (`--start-plugins on-deploy`): the registry instantiates its component and calls `init`
//! before registering its listeners, so a plugin that cannot start (a trap, a refused
//! config) is reported and not deployed.
//!
//! Either way, a new version of a running plugin starts before it replaces the old one: a
//! new version that cannot start is reported and the old one keeps running.
//!
//! A plugin whose watched objects exist starts at once either way: its listener is sent
//! them as initial-list adds.

use std::fmt;
use std::str::FromStr;

/// When deployed plugins start (see the [module docs](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PluginStart {
    /// Instantiate and `init` while deploying; a plugin that cannot start is not deployed.
    OnDeploy,
    /// Instantiate and `init` before the plugin's first event.
    #[default]
    OnFirstEvent,
}

impl PluginStart {
    const NAMES: [(&'static str, PluginStart); 2] =
        [("on-deploy", PluginStart::OnDeploy), ("on-first-event", PluginStart::OnFirstEvent)];
}

impl fmt::Display for PluginStart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Self::NAMES.iter().find(|(_, start)| start == self).map_or("", |(name, _)| name);
        f.write_str(name)
    }
}

impl FromStr for PluginStart {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::NAMES.iter().find(|(name, _)| *name == s).map(|(_, start)| *start).ok_or_else(|| {
            let names: Vec<&str> = Self::NAMES.iter().map(|(name, _)| *name).collect();
            format!("unknown plugin start `{s}` (one of: {})", names.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for start in [PluginStart::OnDeploy, PluginStart::OnFirstEvent] {
            assert_eq!(start.to_string().parse::<PluginStart>(), Ok(start));
        }
        assert!("lazy".parse::<PluginStart>().unwrap_err().contains("on-first-event"));
    }
}
