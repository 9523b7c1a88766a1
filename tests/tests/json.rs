//! Every query command's `-json` output, against a real cluster, valid under the JSON
//! Schema committed for it in `docs/schemas/` (generated from the output structs the
//! commands and the HTTP API share), and saying what the text form says.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use gantry_tests::{assert_valid_json, ensure_user, need_root, wait_until, Cluster};

/// `program args` as `user`, which must succeed; its output validated under `schema`
/// and parsed.
fn json_of(
    c: &Cluster,
    user: &str,
    schema: &str,
    program: &str,
    args: &[&str],
) -> serde_json::Value {
    let out = c.as_user(user, program, args);
    assert_eq!(out.code, 0, "{program} {args:?}: {out:?}");
    assert_eq!(
        out.stdout.lines().count(),
        1,
        "one document, one line: {out:?}"
    );
    assert_valid_json(schema, &out.stdout);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{program} {args:?}: {e}: {out:?}"))
}

#[test]
fn every_query_command_prints_json_valid_under_its_schema() {
    if !need_root("every_query_command_prints_json_valid_under_its_schema") {
        return;
    }
    ensure_user("js_u1");
    let c = Cluster::one_host();
    c.wait_host_reporting("node1");
    assert_eq!(c.qconf(&["-rattr", "queue", "slots", "2", "all.q"]).code, 0);
    assert_eq!(c.qconf(&["-au", "js_u1", "arusers"]).code, 0);
    let dir = tempfile::tempdir().unwrap();
    let rqs = dir.path().join("rqs");
    std::fs::write(
        &rqs,
        "{\n   name         max_u_slots\n   description  NONE\n   enabled      TRUE\n   limit        users {*} to slots=5\n}\n",
    )
    .unwrap();
    assert_eq!(c.qconf(&["-Arqs", rqs.to_str().unwrap()]).code, 0);
    let tree = dir.path().join("tree");
    std::fs::write(&tree, "physics 1.0 TRUE FALSE\n").unwrap();
    assert_eq!(c.qconf(&["-Mgq", tree.to_str().unwrap()]).code, 0);

    // A job that ran (for qacct), one running, one pending.
    let done = c.submit(
        "js_u1",
        &["-b", "y", "-o", "/dev/null", "-j", "y", "/bin/sleep", "1"],
    );
    wait_until(
        "the first job to be accounted",
        Duration::from_secs(30),
        || c.as_user("js_u1", "qacct", &["-j", &done]).code == 0,
    );
    let running = c.submit(
        "js_u1",
        &["-b", "y", "-o", "/dev/null", "-j", "y", "/bin/sleep", "300"],
    );
    let pending = c.submit("js_u1", &["-b", "y", "-h", "-N", "later", "/bin/true"]);
    wait_until("the second job to run", Duration::from_secs(30), || {
        c.job_state(&running) == "r"
    });
    let ar = c.as_user("js_u1", "qrsub", &["-d", "1:0:0"]);
    assert_eq!(ar.code, 0, "{ar:?}");

    // qstat in its forms.
    let u = "js_u1";
    let plain = json_of(&c, u, "qstat.json", "qstat", &["-json"]);
    let ids: Vec<String> = plain["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["job_id"].to_string())
        .collect();
    assert_eq!(ids, [running.clone(), pending.clone()], "{plain}");
    for args in [
        &["-f", "-json"][..],
        &["-F", "-json"],
        &["-f", "-explain", "E", "-json"],
        &["-r", "-json"],
        &["-t", "-json"],
        &["-g", "t", "-json"],
        &["-g", "d", "-json"],
        &["-s", "p", "-json"],
        &["-u", "*", "-json"],
    ] {
        json_of(&c, u, "qstat.json", "qstat", args);
    }
    for form in ["-pri", "-urg", "-ext"] {
        let doc = json_of(&c, u, "qstat.json", "qstat", &[form, "-json"]);
        assert!(
            doc["jobs"][0]["priority_parts"].is_object(),
            "{form}: {doc}"
        );
    }
    let detail = json_of(&c, u, "qstat-j.json", "qstat", &["-j", &pending, "-json"]);
    assert_eq!(detail["jobs"][0]["job_name"], "later", "{detail}");
    assert_eq!(detail["jobs"][0]["hold"], true, "{detail}");
    let summary = json_of(&c, u, "qstat-g-c.json", "qstat", &["-g", "c", "-json"]);
    assert_eq!(summary["cluster_queues"][0]["name"], "all.q", "{summary}");
    assert_eq!(summary["cluster_queues"][0]["used"], 1, "{summary}");
    assert_eq!(summary["cluster_queues"][0]["total"], 2, "{summary}");

    // qhost.
    let hosts = json_of(&c, u, "qhost.json", "qhost", &["-json"]);
    assert_eq!(hosts["hosts"][0]["name"], "node1", "{hosts}");
    assert_eq!(
        hosts["hosts"][0]["host_values"][1]["name"], "num_proc",
        "{hosts}"
    );
    assert!(hosts["hosts"][0].get("queues").is_none(), "{hosts}");
    let full = json_of(&c, u, "qhost.json", "qhost", &["-F", "-q", "-j", "-json"]);
    let node = &full["hosts"][0];
    assert_eq!(node["queues"][0]["name"], "all.q", "{full}");
    assert_eq!(node["queues"][0]["slots_used"], 1, "{full}");
    assert_eq!(node["jobs"][0]["job_id"].to_string(), running, "{full}");
    assert_eq!(node["jobs"][0]["master"], true, "{full}");
    assert!(
        node["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "mem_free" && r["dominance"] == "hl"),
        "{full}"
    );

    // qquota, its group tree.
    let quotas = json_of(&c, u, "qquota.json", "qquota", &["-json"]);
    assert_eq!(
        quotas["quota_rules"][0]["rule"], "max_u_slots/1",
        "{quotas}"
    );
    assert_eq!(
        quotas["quota_rules"][0]["limits"][0]["used"], "1",
        "{quotas}"
    );
    let groups = json_of(&c, u, "qquota-g.json", "qquota", &["-g", "-json"]);
    assert!(
        groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "physics"),
        "{groups}"
    );

    // qrstat.
    let ars = json_of(&c, u, "qrstat.json", "qrstat", &["-json"]);
    let ar_id = ars["advance_reservations"][0]["id"].to_string();
    assert_eq!(ars["advance_reservations"][0]["owner"], "js_u1", "{ars}");
    let one = json_of(&c, u, "qrstat.json", "qrstat", &["-ar", &ar_id, "-json"]);
    assert_eq!(
        one["advance_reservations"].as_array().unwrap().len(),
        1,
        "{one}"
    );

    // qacct: a record, the summary, a grouped summary.
    let record = json_of(&c, u, "qacct.json", "qacct", &["-j", &done, "-json"]);
    let r = &record["records"][0];
    assert_eq!(r["jobnumber"].to_string(), done, "{record}");
    assert_eq!(r["owner"], "js_u1", "{record}");
    assert_eq!(
        (r["failed"].as_u64(), r["exit_status"].as_i64()),
        (Some(0), Some(0)),
        "{record}"
    );
    json_of(&c, u, "qacct.json", "qacct", &["-json"]);
    let by_owner = json_of(&c, u, "qacct.json", "qacct", &["-o", "-json"]);
    if let Some(row) = by_owner["summary"].get(0) {
        assert_eq!(
            row["columns"][0],
            serde_json::json!({"name": "OWNER", "value": "js_u1"})
        );
    }

    // qconf's show options.
    let queues = json_of(&c, "root", "qconf.json", "qconf", &["-sql", "-json"]);
    assert_eq!(queues["names"], serde_json::json!(["all.q"]));
    let queue = json_of(
        &c,
        "root",
        "qconf.json",
        "qconf",
        &["-sq", "all.q", "-json"],
    );
    let attributes = queue["objects"][0]["attributes"].as_array().unwrap();
    assert_eq!(
        attributes[0],
        serde_json::json!({"name": "qname", "value": "all.q"})
    );
    assert!(attributes.iter().any(|a| a["name"] == "slots"), "{queue}");
    let complexes = json_of(&c, "root", "qconf.json", "qconf", &["-sc", "-json"]);
    assert!(
        complexes["complexes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == "slots" && x["type"] == "INT" && x["consumable"] == "YES"),
        "{complexes}"
    );
    let sets = json_of(&c, "root", "qconf.json", "qconf", &["-srqs", "-json"]);
    let set = sets["objects"][0]["attributes"].as_array().unwrap();
    assert!(
        set.contains(&serde_json::json!({"name": "limit", "value": "users {*} to slots=5"})),
        "{sets}"
    );
    for args in [
        &["-sconf", "-json"][..],
        &["-ssconf", "-json"],
        &["-sel", "-json"],
        &["-se", "node1", "-json"],
        &["-sul", "-json"],
        &["-su", "arusers", "-json"],
        &["-spl", "-json"],
        &["-sm", "-json"],
        &["-sh", "-json"],
        &["-sgq", "-json"],
        &["-sstree", "-json"],
    ] {
        let out = c.qconf(args);
        if out.code == 0 {
            assert_valid_json("qconf.json", &out.stdout);
        } else {
            // A show option that finds nothing says so as it does without -json.
            assert!(
                out.stdout.is_empty() && !out.stderr.is_empty(),
                "{args:?}: {out:?}"
            );
        }
    }
    // Several show options: a document each, in order.
    let two = c.qconf(&["-json", "-sql", "-sm"]);
    let docs: Vec<serde_json::Value> = two
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 2, "{two:?}");
    assert_eq!(
        (docs[0]["option"].as_str(), docs[1]["option"].as_str()),
        (Some("-sql"), Some("-sm"))
    );
    assert_eq!(c.client("qdel", &[&running, &pending]).code, 0);
}
