//! The objects of one calculation by index, and the refs made of jobs' tasks.

use std::collections::HashMap;

use gantry_proto::TaskId;

use super::{Holder, Holders, PolicyJob, PolicyObjects, Ref};

/// Users, projects and departments by name, each a [`Holder`] once.
pub(crate) struct Index<'a> {
    objects: &'a PolicyObjects<'a>,
    users: HashMap<String, usize>,
    projects: HashMap<String, usize>,
    departments: HashMap<String, usize>,
    pub(crate) holders: Holders,
}

impl<'a> Index<'a> {
    pub(crate) fn new(objects: &'a PolicyObjects<'a>) -> Index<'a> {
        Index {
            objects,
            users: HashMap::new(),
            projects: HashMap::new(),
            departments: HashMap::new(),
            holders: Holders::default(),
        }
    }

    /// A ref of task `task` of job `j` (the `ji`th): its user, project and department
    /// are the objects of those names that exist.
    pub(crate) fn make_ref(
        &mut self,
        ji: usize,
        j: &PolicyJob,
        task: TaskId,
        running: bool,
    ) -> Ref {
        let objects = self.objects;
        let user = objects.users.get(&j.user).map(|u| {
            *self.users.entry(j.user.clone()).or_insert_with(|| {
                self.holders.users.push(Holder {
                    fshare: f64::from(u.fshare),
                    oticket: f64::from(u.oticket),
                    job_cnt: 0,
                });
                self.holders.users.len() - 1
            })
        });
        let project = j
            .project
            .as_ref()
            .and_then(|p| objects.projects.get(p).map(|o| (p, o)))
            .map(|(p, o)| {
                *self.projects.entry(p.clone()).or_insert_with(|| {
                    self.holders.projects.push(Holder {
                        fshare: f64::from(o.fshare),
                        oticket: f64::from(o.oticket),
                        job_cnt: 0,
                    });
                    self.holders.projects.len() - 1
                })
            });
        let department = j
            .department
            .as_ref()
            .and_then(|d| objects.departments.get(d).map(|o| (d, o)))
            .map(|(d, &(fshare, oticket))| {
                *self.departments.entry(d.clone()).or_insert_with(|| {
                    self.holders.departments.push(Holder {
                        fshare: f64::from(fshare),
                        oticket: f64::from(oticket),
                        job_cnt: 0,
                    });
                    self.holders.departments.len() - 1
                })
            });
        Ref {
            job: ji,
            task,
            running,
            user,
            project,
            department,
            node: None,
            acc: 0.0,
            ot: 0.0,
            ft: 0.0,
            st: 0.0,
        }
    }
}
