//! The objects of one calculation by index, and the refs made of jobs' tasks.

use std::collections::HashMap;

use gantry_proto::TaskId;

use super::{Holder, Holders, PolicyJob, PolicyObjects, Ref};

/// Users, projects and departments by name, each a [`Holder`] once.
pub(crate) struct Index<'o, 'j> {
    objects: &'o PolicyObjects<'o>,
    users: FastMap<&'j str, Option<usize>>,
    projects: FastMap<&'j str, Option<usize>>,
    departments: FastMap<&'j str, Option<usize>>,
    pub(crate) holders: Holders,
}

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

impl<'o, 'j> Index<'o, 'j> {
    pub(crate) fn new(objects: &'o PolicyObjects<'o>) -> Index<'o, 'j> {
        Index {
            objects,
            users: FastMap::default(),
            projects: FastMap::default(),
            departments: FastMap::default(),
            holders: Holders::default(),
        }
    }

    /// A ref of task `task` of job `j` (the `ji`th): its user, project and department
    /// are the objects of those names that exist.
    pub(crate) fn make_ref(
        &mut self,
        ji: usize,
        j: &'j PolicyJob<'j>,
        task: TaskId,
        running: bool,
    ) -> Ref {
        let objects = self.objects;
        let holders = &mut self.holders;
        let user = *self.users.entry(j.user).or_insert_with(|| {
            objects.users.get(j.user).map(|u| {
                holders.users.push(Holder {
                    fshare: f64::from(u.fshare),
                    oticket: f64::from(u.oticket),
                    job_cnt: 0,
                });
                holders.users.len() - 1
            })
        });
        let project = match j.project {
            None => None,
            Some(p) => *self.projects.entry(p).or_insert_with(|| {
                objects.projects.get(p).map(|o| {
                    holders.projects.push(Holder {
                        fshare: f64::from(o.fshare),
                        oticket: f64::from(o.oticket),
                        job_cnt: 0,
                    });
                    holders.projects.len() - 1
                })
            }),
        };
        let department = match j.department {
            None => None,
            Some(d) => *self.departments.entry(d).or_insert_with(|| {
                objects.departments.get(d).map(|&(fshare, oticket)| {
                    holders.departments.push(Holder {
                        fshare: f64::from(fshare),
                        oticket: f64::from(oticket),
                        job_cnt: 0,
                    });
                    holders.departments.len() - 1
                })
            }),
        };
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
