//! One [`Pool`] per NUMA node, each placed on its node; a thread takes from the pool of
//! the node it runs on (the memory-patterns write-up's `PerThreadPool`, which pre-creates a pool per
//! node and picks one with `numa_node_of_cpu(sched_getcpu())`).

use alloc::vec::Vec;

use crate::numa::{self, Placement};
use crate::policy::{Policy, SingleThreaded};
use crate::{Capacity, ConfigError, Exhausted, Pool, PoolConfig, Pooled};

/// One pool per online NUMA node, placed there ([`Placement::Node`]); [`local`]
/// picks the pool of the node the calling thread runs on. An object goes back to the
/// pool it came from wherever it is dropped, as with any [`Pool`].
///
/// On a machine with one node there is one pool, on node 0: it runs, and own-node and
/// remote memory cannot differ.
///
/// ```
/// use handoff_pool::numa::PerNode;
/// use handoff_pool::{policy::ThreadCached, Capacity};
/// # if cfg!(miri) { return; } // Miri cannot read /sys or place memory
/// let pools = PerNode::<[u64; 8], ThreadCached>::new(Capacity::Fixed(1024)).unwrap();
/// let order = pools.try_alloc([1; 8]).unwrap();
/// // The object lies on the node this thread was running on when it asked.
/// let node = handoff_pool::numa::node_of(&*order).unwrap();
/// assert!(pools.nodes().contains(&node));
/// ```
///
/// [`local`]: PerNode::local
pub struct PerNode<T, P: Policy = SingleThreaded> {
    nodes: Vec<u32>,
    pools: Vec<Pool<T, P>>,
    /// `node_of_cpu[c]`: the index in `nodes` of CPU `c`'s node.
    node_of_cpu: Vec<u16>,
}

impl<T, P: Policy> PerNode<T, P> {
    /// A pool of `capacity` on every online node.
    pub fn new(capacity: Capacity) -> Result<Self, ConfigError> {
        let nodes = numa::online_nodes().map_err(ConfigError::Numa)?;
        let pools = nodes
            .iter()
            .map(|&n| {
                Pool::with_config(PoolConfig {
                    placement: Placement::Node(n),
                    ..PoolConfig::new(capacity)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut node_of_cpu = Vec::new();
        for (i, &n) in nodes.iter().enumerate() {
            for cpu in numa::cpus_of_node(n).map_err(ConfigError::Numa)? {
                let cpu = cpu as usize;
                if node_of_cpu.len() <= cpu {
                    node_of_cpu.resize(cpu + 1, 0);
                }
                node_of_cpu[cpu] = i as u16;
            }
        }
        Ok(PerNode {
            nodes,
            pools,
            node_of_cpu,
        })
    }

    /// The nodes, in the order of their pools.
    pub fn nodes(&self) -> &[u32] {
        &self.nodes
    }

    /// The pool on `node`, if it is one of [`nodes`](Self::nodes).
    pub fn on_node(&self, node: u32) -> Option<&Pool<T, P>> {
        let i = self.nodes.iter().position(|&n| n == node)?;
        self.pools.get(i)
    }

    /// The pool of the node the calling thread runs on now (its CPU read with
    /// `sched_getcpu`, which the C library answers without a system call where the
    /// kernel offers it). A CPU the node lists did not name, or a failed read, gives
    /// the first node's pool. A thread that is not pinned may move to another node
    /// right after: pin the threads that should stay local.
    pub fn local(&self) -> &Pool<T, P> {
        let i = numa::current_cpu()
            .ok()
            .and_then(|c| self.node_of_cpu.get(c as usize))
            .map_or(0, |&i| usize::from(i));
        &self.pools[i]
    }

    /// Allocates from [`local`](Self::local) ([`Pool::try_alloc`]).
    pub fn try_alloc(&self, value: T) -> Result<Pooled<'_, T, P>, Exhausted<T>> {
        self.local().try_alloc(value)
    }
}

impl<T, P: Policy> core::fmt::Debug for PerNode<T, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PerNode")
            .field("nodes", &self.nodes)
            .field("policy", &P::NAME)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::LockFree;

    #[test]
    #[cfg_attr(miri, ignore = "reads /sys and places memory")]
    fn every_object_lies_on_its_pools_node_and_goes_home() {
        let pools = PerNode::<u64, LockFree>::new(Capacity::Fixed(64)).unwrap();
        assert_eq!(pools.nodes(), &numa::online_nodes().unwrap()[..]);
        for &n in pools.nodes() {
            let pool = pools.on_node(n).unwrap();
            let held: Vec<_> = (0..64).map(|i| pool.try_alloc(i).unwrap()).collect();
            for o in &held {
                assert_eq!(numa::node_of(&**o).unwrap(), n);
            }
            assert!(pool.try_alloc(99).is_err(), "each node's pool is its own");
            drop(held);
            assert_eq!(*pool.try_alloc(7).unwrap(), 7, "dropped objects went home");
        }
        assert!(pools.on_node(999).is_none());
        let local = pools.try_alloc(5).unwrap();
        // A thread that is not pinned may move between nodes; on one node it cannot.
        if pools.nodes().len() == 1 {
            assert_eq!(numa::node_of(&*local).unwrap(), pools.nodes()[0]);
        }
        assert!(numa::current_cpu().is_ok());
    }

    #[test]
    #[cfg_attr(miri, ignore = "reads /sys")]
    fn every_online_cpu_has_a_node() {
        let cpus: usize = numa::online_nodes()
            .unwrap()
            .iter()
            .map(|&n| numa::cpus_of_node(n).unwrap().len())
            .sum();
        assert!(cpus >= 1);
        let here = numa::current_cpu().unwrap();
        assert!(numa::online_nodes()
            .unwrap()
            .iter()
            .any(|&n| numa::cpus_of_node(n).unwrap().contains(&here)));
    }
}
