//! The categories SGE 8.1.9 wrote for the same jobs (`qacct -j`, recorded on this
//! machine): which requests count, in which order and form.

use std::collections::BTreeMap;

use gantry_common::rqs::{parse_sets, QuotaSet};
use gantry_proto::{ArId, UserSet};

use super::accounting_category;
use crate::synthetic::job;
use crate::view::ClusterImage;

fn userset(name: &str, entries: &[&str]) -> UserSet {
    UserSet {
        name: name.into(),
        types: vec!["ACL".into()],
        fshare: 0,
        oticket: 0,
        entries: entries.iter().map(|e| e.to_string()).collect(),
    }
}

fn image(user_lists: &str, projects: &str) -> ClusterImage {
    let mut q = gantry_common::queue::new_queue("all.q", "@allhosts");
    for (k, v) in [("user_lists", user_lists), ("projects", projects)] {
        if let Some(a) = q.attr_mut(k) {
            a.default = v.to_string();
        }
    }
    ClusterImage {
        queues: std::sync::Arc::new(BTreeMap::from([("all.q".to_string(), q)])),
        usersets: std::sync::Arc::new(BTreeMap::from([
            ("arusers".to_string(), userset("arusers", &["user1"])),
            ("xx".to_string(), userset("xx", &["user1"])),
        ])),
        ..ClusterImage::default()
    }
}

fn rqs(text: &str) -> Vec<QuotaSet> {
    parse_sets(text).expect("quota set")
}

#[test]
fn categories_are_sges() {
    let plain = image("NONE", "NONE");
    let cases: Vec<(&str, ClusterImage, Vec<QuotaSet>, gantry_common::job::Job)> = vec![
        ("", plain.clone(), vec![], job(1, "user1", &[], &[])),
        (
            "-q all.q@* -l h_rt=10,h_vmem=1G,s_rt=5 -pe sm* 1,2",
            plain.clone(),
            vec![],
            {
                let mut j = job(
                    3,
                    "user1",
                    &[("h_vmem", "1G"), ("h_rt", "10"), ("s_rt", "5")],
                    &[],
                );
                j.spec.queues = vec!["all.q@*".into()];
                j.spec.pe = Some(("sm*".into(), "1-2".into()));
                j
            },
        ),
        (
            "-q all.q -l h_rt=100,mem_free=1M -pe smp 1 -ckpt ck1",
            plain.clone(),
            vec![],
            {
                let mut j = job(4, "user1", &[("mem_free", "1M"), ("h_rt", "100")], &[]);
                j.spec.queues = vec!["all.q".into()];
                j.spec.pe = Some(("smp".into(), "1".into()));
                j.spec.ckpt = Some("ck1".into());
                // Named by no queue: not part of the category.
                j.spec.project = Some("p1".into());
                j
            },
        ),
        (
            "-l arch=lx-amd64 -soft -l h_rt=50",
            plain.clone(),
            vec![],
            {
                let mut j = job(5, "user1", &[("arch", "lx-amd64")], &[("h_rt", "50")]);
                j.spec.soft_queues = vec!["all.q".into()];
                j
            },
        ),
        (
            "-masterq all.q -l h_rt=20 -pe smp 1",
            plain.clone(),
            vec![],
            {
                let mut j = job(6, "user1", &[("h_rt", "20")], &[]);
                j.spec.masterq = vec!["all.q".into()];
                j.spec.pe = Some(("smp".into(), "1".into()));
                j
            },
        ),
        ("-l h_rt=30", plain.clone(), vec![], {
            job(7, "user1", &[("h_rt", "20"), ("h_rt", "30")], &[])
        }),
        // An access list a queue names, of which the owner is a member.
        ("-U xx -l h_rt=20", image("xx", "NONE"), vec![], {
            job(8, "user1", &[("h_rt", "20")], &[])
        }),
        ("-l h_rt=20", image("xx", "NONE"), vec![], {
            job(9, "user2", &[("h_rt", "20")], &[])
        }),
        (
            "-U xx -q all.q -masterq all.q -l h_rt=20 -pe smp 1 -P p1",
            image("xx", "p1"),
            vec![],
            {
                let mut j = job(10, "user1", &[("h_rt", "20")], &[]);
                j.spec.queues = vec!["all.q".into()];
                j.spec.masterq = vec!["all.q".into()];
                j.spec.pe = Some(("smp".into(), "1".into()));
                j.spec.project = Some("p1".into());
                j
            },
        ),
        // A quota rule that names the owner.
        (
            "-u user1 -l h_rt=20",
            plain.clone(),
            rqs("{\nname r1\nenabled TRUE\nlimit users user1 to slots=4\n}\n"),
            job(11, "user1", &[("h_rt", "20")], &[]),
        ),
        (
            "-u user1",
            plain.clone(),
            rqs("{\nname r1\nenabled TRUE\nlimit users {*} to slots=4\n}\n"),
            job(11, "user1", &[], &[]),
        ),
        // `users *` limits everyone together: nobody is singled out.
        (
            "",
            plain.clone(),
            rqs("{\nname r1\nenabled TRUE\nlimit users * to slots=4\n}\n"),
            job(11, "user1", &[], &[]),
        ),
        (
            "",
            plain.clone(),
            rqs("{\nname r1\nenabled TRUE\nlimit users user2 to slots=4\n}\n"),
            job(11, "user1", &[], &[]),
        ),
        (
            "-u user1",
            plain.clone(),
            rqs("{\nname r1\nenabled TRUE\nlimit users @arusers to slots=4\n}\n"),
            job(11, "user1", &[], &[]),
        ),
        ("-pe smp 1 -ar 1", plain.clone(), vec![], {
            let mut j = job(13, "user1", &[], &[]);
            j.spec.pe = Some(("smp".into(), "1".into()));
            j.spec.ar = Some(ArId(1));
            j
        }),
        ("-l h_rt=20 -I y", plain.clone(), vec![], {
            let mut j = job(14, "user1", &[("h_rt", "20")], &[]);
            j.spec.immediate = true;
            j
        }),
    ];
    for (want, image, sets, job) in cases {
        let sets: Vec<&QuotaSet> = sets.iter().collect();
        assert_eq!(
            accounting_category(&image.view(), &sets, &job),
            want,
            "job {}",
            job.id
        );
    }
}
