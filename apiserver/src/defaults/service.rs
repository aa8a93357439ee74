//! The defaults of a Service, as `SetDefaults_Service` and its create strategy make them:
//! type `ClusterIP`, session affinity `None`, each port's protocol `TCP` and target port its
//! port, one IPv4 family (`SingleStack`), internal traffic policy `Cluster`, and a cluster IP
//! from the service range 10.96.0.0/12 (kube-apiserver's default) — picked from the
//! Service's namespace and name, so the same Service gets the same address; another's may
//! collide, which a real allocator would prevent. A headless Service (`clusterIP: None`)
//! and an `ExternalName` one get none.

use serde_json::{Map, Value, json};

use super::or_insert;

/// Fills in the defaults of the Service `obj`.
pub(super) fn apply(obj: &mut Value) {
    let namespace = obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default().to_owned();
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    or_insert(spec, "type", json!("ClusterIP"));
    or_insert(spec, "sessionAffinity", json!("None"));
    let external_name = spec.get("type").and_then(Value::as_str) == Some("ExternalName");
    for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(port) = port.as_object_mut() {
            or_insert(port, "protocol", json!("TCP"));
            if let Some(number) = port.get("port").cloned() {
                or_insert(port, "targetPort", number);
            }
        }
    }
    if external_name {
        return;
    }
    or_insert(spec, "internalTrafficPolicy", json!("Cluster"));
    allocate(spec, &namespace, &name);
}

fn allocate(spec: &mut Map<String, Value>, namespace: &str, name: &str) {
    let given = spec.get("clusterIP").and_then(Value::as_str).filter(|ip| !ip.is_empty()).map(str::to_owned);
    let ip = given.unwrap_or_else(|| cluster_ip(namespace, name));
    spec.insert("clusterIP".into(), json!(ip));
    or_insert(spec, "clusterIPs", json!([ip]));
    or_insert(spec, "ipFamilies", json!(["IPv4"]));
    or_insert(spec, "ipFamilyPolicy", json!("SingleStack"));
}

/// An address of 10.96.0.0/12 for `namespace/name`, never the network's first two
/// (10.96.0.1 is the `kubernetes` Service's) nor its broadcast address.
fn cluster_ip(namespace: &str, name: &str) -> String {
    // FNV-1a: stable across runs and platforms.
    let hash = format!("{namespace}/{name}")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let size = (1_u64 << 20) - 3;
    let offset = u32::try_from(hash % size + 2).expect("below 2^20");
    let address = (10_u32 << 24 | 96 << 16) + offset;
    std::net::Ipv4Addr::from(address).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_gets_its_type_ports_and_an_address_of_the_range() {
        let mut svc = json!({"metadata": {"name": "web", "namespace": "shop"}, "spec": {"ports": [{"port": 80}]}});
        apply(&mut svc);
        let spec = &svc["spec"];
        assert_eq!(spec["type"], "ClusterIP");
        assert_eq!(spec["ports"][0], json!({"port": 80, "protocol": "TCP", "targetPort": 80}));
        let ip: std::net::Ipv4Addr = spec["clusterIP"].as_str().unwrap().parse().unwrap();
        assert!(ip.octets()[0] == 10 && (96..112).contains(&ip.octets()[1]), "{ip}");
        assert_eq!(spec["clusterIPs"], json!([spec["clusterIP"]]));
        assert_eq!(
            (spec["ipFamilies"].clone(), spec["ipFamilyPolicy"].clone()),
            (json!(["IPv4"]), json!("SingleStack"))
        );
        let mut again = json!({"metadata": {"name": "web", "namespace": "shop"}, "spec": {}});
        apply(&mut again);
        assert_eq!(again["spec"]["clusterIP"], spec["clusterIP"], "the same Service, the same address");
    }

    #[test]
    fn headless_and_external_name_services_get_no_address() {
        let mut headless = json!({"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}});
        apply(&mut headless);
        assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
        let mut external =
            json!({"metadata": {"name": "e"}, "spec": {"type": "ExternalName", "externalName": "example.com"}});
        apply(&mut external);
        assert!(external["spec"].get("clusterIP").is_none());
    }
}
