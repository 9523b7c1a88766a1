//! `qquota -g`: each group of the hierarchical group quota tree as the next cycle
//! allocates it, in weighted slots: its configured quota, its quota this cycle (an
//! interior group's: what its children left it for its own jobs), the surplus it
//! received, what its jobs ask for and hold, and its allocation. As a table, `-xml` or
//! `-json` (one document: `{"groups":[{"name":...}]}`).

use gantry_common::groups::quota_str;
use gantry_proto::GroupRow;

use crate::xml::Xml;

/// A number of weighted slots: whole as an integer, else with two decimals.
fn slots(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        format!("{x:.2}")
    }
}

fn configured(g: &GroupRow) -> String {
    g.configured.map_or_else(|| "-".to_string(), quota_str)
}

pub fn render_text(rows: &[GroupRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "{:<30} {:<10} {:>10} {:>10} {:>10} {:>10} {:>10}\n{}\n",
        "group",
        "quota",
        "effective",
        "surplus",
        "demand",
        "running",
        "allocation",
        "-".repeat(96)
    );
    for g in rows {
        out.push_str(&format!(
            "{:<30} {:<10} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
            g.name,
            configured(g),
            slots(g.quota),
            slots(g.surplus),
            slots(g.demand),
            slots(g.running),
            slots(g.allocation)
        ));
    }
    out
}

pub fn render_xml(rows: &[GroupRow]) -> String {
    let mut x = Xml::new();
    x.open(0, "qquota_groups", &[]);
    for g in rows {
        x.open(1, "group", &[("name", &g.name)]);
        for (k, v) in [
            ("configured_quota", configured(g)),
            ("accept_surplus", g.accept_surplus.to_string()),
            ("autoregroup", g.autoregroup.to_string()),
            ("effective_quota", slots(g.quota)),
            ("subtree_quota", slots(g.subtree_quota)),
            ("surplus", slots(g.surplus)),
            ("demand", slots(g.demand)),
            ("running", slots(g.running)),
            ("allocation", slots(g.allocation)),
        ] {
            x.element(2, k, &[], &v);
        }
        x.close(1, "group");
    }
    x.close(0, "qquota_groups");
    x.finish()
}

/// `qquota -g -json`: the tree as one document (`gantry_common::output::GroupList`).
pub fn render_json(rows: &[GroupRow]) -> String {
    crate::json_line(&gantry_common::output::GroupList::of(rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_proto::GroupQuota;

    fn row(
        name: &str,
        configured: Option<GroupQuota>,
        q: f64,
        s: f64,
        d: f64,
        r: f64,
        a: f64,
    ) -> GroupRow {
        GroupRow {
            name: name.into(),
            configured,
            accept_surplus: true,
            autoregroup: false,
            quota: q,
            subtree_quota: q,
            demand: d,
            running: r,
            surplus: s,
            allocation: a,
        }
    }

    fn rows() -> Vec<GroupRow> {
        vec![
            row("<none>", None, 0.0, 0.0, 0.0, 0.0, 0.0),
            row(
                "chemistry",
                Some(GroupQuota::Proportional(0.3)),
                3.0,
                0.0,
                12.0,
                3.0,
                3.0,
            ),
            row(
                "physics",
                Some(GroupQuota::Proportional(0.7)),
                7.0,
                3.0,
                30.0,
                7.0,
                10.0,
            ),
            row(
                "physics.hep",
                Some(GroupQuota::Static(20)),
                3.333_333,
                0.0,
                1.5,
                1.5,
                1.5,
            ),
        ]
    }

    #[test]
    fn the_table() {
        assert_eq!(
            render_text(&rows()),
            format!(
                "group                          quota       effective    surplus     demand    running allocation\n{}\n\
                 <none>                         -                   0          0          0          0          0\n\
                 chemistry                      0.3                 3          0         12          3          3\n\
                 physics                        0.7                 7          3         30          7         10\n\
                 physics.hep                    20               3.33          0       1.50       1.50       1.50\n",
                "-".repeat(96)
            )
        );
        assert_eq!(render_text(&[]), "");
    }

    #[test]
    fn xml_and_json() {
        let x = render_xml(&rows());
        assert!(x.contains("<group name='physics'>"), "{x}");
        assert!(
            x.contains("<configured_quota>0.7</configured_quota>"),
            "{x}"
        );
        assert!(x.contains("<allocation>10</allocation>"), "{x}");
        let j: serde_json::Value = serde_json::from_str(&render_json(&rows())).unwrap();
        assert_eq!(j["groups"][2]["name"], "physics");
        assert_eq!(j["groups"][2]["allocation"], 10.0);
        assert_eq!(j["groups"][0]["configured_quota"], serde_json::Value::Null);
    }
}
