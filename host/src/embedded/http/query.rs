//! The query parameters of LIST and WATCH, read and validated as the API server does:
//! flags as Go's `strconv.ParseBool`, numbers, and the rules tying `resourceVersion`,
//! `resourceVersionMatch`, `continue`, `sendInitialEvents` and `allowWatchBookmarks`
//! together (answered with `400 BadRequest` or `422 Invalid` and the API server's wording).

use std::time::Duration;

use crate::cluster::RequestError;
use crate::embedded::ResourceVersionMatch;
use crate::informer::{ListParams, WatchParams};

/// A request's decoded query.
pub struct Query(Vec<(String, String)>);

fn bad(message: String) -> RequestError {
    RequestError::BadRequest(message)
}

fn invalid(what: &str) -> RequestError {
    let message = format!("ListOptions.meta.k8s.io \"\" is invalid: {what}");
    RequestError::Invalid { message, causes: Vec::new() }
}

impl Query {
    /// The query of `uri`.
    pub fn of(uri: &axum::http::Uri) -> Self {
        Self(uri.query().map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default())
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Every value of `name`, in order (`dryRun=All&dryRun=All`).
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }

    /// A flag, read as Go's `strconv.ParseBool` reads it.
    pub fn flag(&self, name: &str) -> Result<Option<bool>, RequestError> {
        self.get(name)
            .map(|value| match value {
                "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
                "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
                _ => Err(bad(format!("{name}: invalid boolean value \"{value}\""))),
            })
            .transpose()
    }

    /// Whether the request is a WATCH (`watch=true`).
    pub fn watching(&self) -> Result<bool, RequestError> {
        Ok(self.flag("watch")?.unwrap_or(false))
    }

    fn rv_match(&self) -> Result<Option<ResourceVersionMatch>, RequestError> {
        match self.get("resourceVersionMatch").filter(|m| !m.is_empty()) {
            None => Ok(None),
            Some("NotOlderThan") => Ok(Some(ResourceVersionMatch::NotOlderThan)),
            Some("Exact") => Ok(Some(ResourceVersionMatch::Exact)),
            Some(other) => Err(invalid(&format!(
                "resourceVersionMatch: Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
            ))),
        }
    }

    fn resource_version(&self) -> Option<&str> {
        self.get("resourceVersion").filter(|rv| !rv.is_empty())
    }

    /// A LIST's parameters.
    pub fn list(&self) -> Result<(ListParams, Option<ResourceVersionMatch>), RequestError> {
        let limit = match self.get("limit").filter(|l| !l.is_empty()) {
            Some(text) => text.parse::<i64>().map_err(|_| bad(format!("limit: Invalid value: \"{text}\"")))?,
            None => 0,
        };
        let rv_match = self.rv_match()?;
        let resource_version = self.resource_version();
        let continue_token = self.get("continue").filter(|c| !c.is_empty());
        if let Some(rv) = resource_version
            && rv.parse::<u64>().is_err()
        {
            return Err(bad(format!("resourceVersion: Invalid value: \"{rv}\"")));
        }
        if rv_match.is_some() && resource_version.is_none() {
            return Err(invalid(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if rv_match.is_some() && continue_token.is_some() {
            return Err(invalid(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if rv_match == Some(ResourceVersionMatch::Exact) && resource_version == Some("0") {
            return Err(invalid(
                "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
        if continue_token.is_some() && resource_version.is_some_and(|rv| rv != "0") {
            return Err(bad("specifying resource version is not allowed when using continue".into()));
        }
        let params = ListParams {
            limit: u32::try_from(limit).ok().filter(|l| *l > 0).or((limit > i64::from(u32::MAX)).then_some(u32::MAX)),
            continue_token: continue_token.map(str::to_owned),
            resource_version: resource_version.map(str::to_owned),
        };
        Ok((params, rv_match))
    }

    /// A WATCH's parameters; `current` is the resourceVersion a watch from "now" starts at.
    pub fn watch(&self, default_timeout: Duration) -> Result<WatchParams, RequestError> {
        let allow_bookmarks = self.flag("allowWatchBookmarks")?.unwrap_or(false);
        let send_initial = self.flag("sendInitialEvents")?;
        let rv_match = self.rv_match()?;
        match send_initial {
            None if rv_match.is_some() => {
                return Err(invalid(
                    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            Some(_) if rv_match != Some(ResourceVersionMatch::NotOlderThan) => {
                return Err(invalid(
                    "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            Some(_) if !allow_bookmarks => {
                return Err(invalid(
                    "allowWatchBookmarks: Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true",
                ));
            }
            _ => {}
        }
        let timeout = match self.get("timeoutSeconds").filter(|t| !t.is_empty()) {
            Some(text) => Duration::from_secs(
                text.parse().map_err(|_| bad(format!("timeoutSeconds: Invalid value: \"{text}\"")))?,
            ),
            None => default_timeout,
        };
        let resource_version = self.resource_version().unwrap_or_default().to_owned();
        if !resource_version.is_empty() && resource_version.parse::<u64>().is_err() {
            return Err(bad(format!("resourceVersion: Invalid value: \"{resource_version}\"")));
        }
        Ok(WatchParams {
            resource_version,
            timeout: Some(timeout),
            allow_bookmarks,
            send_initial_events: send_initial == Some(true),
        })
    }
}
