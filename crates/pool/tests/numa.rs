//! NUMA placement: every policy's blocks and the bump arena land on the node asked
//! for, growth keeps the placement, and a node that is not online is an error.
#![cfg(all(target_os = "linux", not(miri)))]

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

use handoff_pool::numa::{self, NumaError, Placement};
use handoff_pool::policy::{LockFree, Locked, SingleThreaded, ThreadCached};
use handoff_pool::{BumpArena, Capacity, ConfigError, Pool, PoolConfig};

type Order = [u64; 8];

fn placements() -> Vec<Placement> {
    let first = numa::online_nodes().unwrap()[0];
    vec![
        Placement::Default,
        Placement::Node(first),
        Placement::Local,
        Placement::Interleave,
    ]
}

macro_rules! placed {
    ($name:ident, $policy:ty) => {
        #[test]
        fn $name() {
            let nodes = numa::online_nodes().unwrap();
            for placement in placements() {
                // Grows from 64 to 4096 slots: every block must follow the placement.
                let pool = Pool::<Order, $policy>::with_config(PoolConfig {
                    placement,
                    ..PoolConfig::new(Capacity::Grow { first_block: 64 })
                })
                .unwrap();
                let objs: Vec<_> = (0..4096u64)
                    .map(|i| pool.try_alloc([i; 8]).unwrap())
                    .collect();
                assert!(pool.capacity() >= 4096);
                for (i, o) in objs.iter().enumerate() {
                    assert_eq!(o[7], i as u64);
                }
                for o in objs.iter().step_by(97) {
                    let node = numa::node_of(&**o).unwrap();
                    assert!(nodes.contains(&node));
                    if let Placement::Node(n) = placement {
                        assert_eq!(node, n, "{placement:?}");
                    }
                }
            }
        }
    };
}

placed!(single_threaded_blocks_are_placed, SingleThreaded);
placed!(locked_blocks_are_placed, Locked);
placed!(lock_free_blocks_are_placed, LockFree);
placed!(thread_cached_blocks_are_placed, ThreadCached);

#[test]
fn a_node_that_is_not_online_is_refused_with_the_online_list() {
    let err = Pool::<u64>::with_config(PoolConfig {
        placement: Placement::Node(63),
        ..PoolConfig::new(Capacity::Fixed(8))
    })
    .unwrap_err();
    let ConfigError::Numa(NumaError::NoSuchNode { node: 63, online }) = err else {
        panic!("{err:?}");
    };
    assert_eq!(online & 1 << 63, 0);
    let msg = err.to_string();
    assert!(msg.contains("NUMA node 63 is not online"), "{msg}");
    assert!(BumpArena::with_placement(64, Placement::Node(4000)).is_err());
}

/// Nodes past the online mask's 64 bits (issue 47: node 64 panicked with a shift
/// overflow in debug builds, and returned `Topology` in release builds, where the shift
/// wrapped to node 0) are not online: `NoSuchNode`, with the online list.
#[test]
fn cpus_of_a_node_beyond_the_mask_is_no_such_node() {
    let online = numa::online_nodes().unwrap();
    for node in [64, 65, 127, 1000, u32::MAX - 1, u32::MAX] {
        if online.contains(&node) {
            continue;
        }
        match numa::cpus_of_node(node) {
            Err(NumaError::NoSuchNode { node: n, .. }) => assert_eq!(n, node),
            other => panic!("cpus_of_node({node}): {other:?}"),
        }
    }
    // And the nodes that are online still answer.
    for node in online {
        numa::cpus_of_node(node).unwrap();
    }
}

#[test]
fn a_placed_arena_is_on_its_node_and_rounded_to_pages() {
    let node = numa::online_nodes().unwrap()[0];
    let mut arena = BumpArena::with_placement(10_000, Placement::Node(node)).unwrap();
    assert_eq!(arena.capacity() % 4096, 0);
    assert!(arena.capacity() >= 10_000);
    for _ in 0..2 {
        let v = arena
            .try_alloc_slice_fill_with(arena.capacity() / 8, |i| i as u64)
            .unwrap();
        assert_eq!(v.last().copied(), Some(v.len() as u64 - 1));
        assert_eq!(numa::node_of(&v[v.len() - 1]).unwrap(), node);
        arena.reset();
    }
}

#[test]
fn placed_memory_too_strictly_aligned_is_refused() {
    #[repr(align(8192))]
    struct Huge(#[allow(dead_code)] u8);
    let err = Pool::<Huge>::with_config(PoolConfig {
        placement: Placement::Local,
        ..PoolConfig::new(Capacity::Fixed(2))
    })
    .unwrap_err();
    assert_eq!(err, ConfigError::Numa(NumaError::Alignment { align: 8192 }));
}
