//! Document 000's 64-byte `Order` and the consumer's simulated risk check.

use std::hint::black_box;

/// Buy or sell.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Buy.
    Buy = 0,
    /// Sell.
    Sell = 1,
}

/// The document's `struct alignas(64) Order`, field for field: exactly one cache line.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct Order {
    /// TSC at the producer's construction (after the allocation).
    pub ts_create_tsc: u64,
    /// Sequence number.
    pub seq: u64,
    /// Price in ticks.
    pub price: i64,
    /// Quantity.
    pub qty: i32,
    /// Client.
    pub client_id: u32,
    /// Symbol.
    pub symbol_id: u32,
    /// Set by the risk check.
    pub risk_seq: u32,
    /// Buy or sell.
    pub side: Side,
    /// The arena the order lives in (arena variant), 0 otherwise.
    pub arena_idx: u8,
    _pad: [u8; 18],
}

const _: () = assert!(std::mem::size_of::<Order>() == 64);
const _: () = assert!(std::mem::align_of::<Order>() == 64);

/// Symbols and clients in the risk tables.
pub const SYMBOLS: usize = 1024;
/// Clients in the risk tables.
pub const CLIENTS: usize = 256;
const WINDOW: usize = 8;

impl Order {
    /// Order number `seq` (its fields derived from `seq`, so the consumer can check it).
    #[inline(always)]
    pub fn new(seq: u64) -> Order {
        Order {
            ts_create_tsc: 0,
            seq,
            price: 10_000 + (seq % 97) as i64,
            qty: 1 + (seq % 50) as i32,
            client_id: (seq.wrapping_mul(7) % CLIENTS as u64) as u32,
            symbol_id: (seq.wrapping_mul(13) % SYMBOLS as u64) as u32,
            risk_seq: 0,
            side: if seq & 1 == 0 { Side::Buy } else { Side::Sell },
            arena_idx: 0,
            _pad: [0; 18],
        }
    }

    /// Whether this is intact order number `k`.
    #[inline(always)]
    pub fn is(&self, k: u64) -> bool {
        self.seq == k
            && self.qty == 1 + (k % 50) as i32
            && self.client_id == (k.wrapping_mul(7) % CLIENTS as u64) as u32
    }
}

#[derive(Clone, Copy)]
struct Limit {
    max_position: i64,
    max_notional: i64,
}

/// The consumer's work: positions by symbol, limits by client, a velocity window by
/// client (the last 8 order times), about 28 KiB in all, so the tables stay in L1d.
/// `rounds` extra passes over the velocity window bring the check to the calibrated
/// weight (`--work-ns`).
pub struct Risk {
    positions: Box<[i64; SYMBOLS]>,
    limits: Box<[Limit; CLIENTS]>,
    velocity: Box<[[u64; WINDOW]; CLIENTS]>,
    heads: Box<[u8; CLIENTS]>,
    rounds: u32,
    /// Orders the check rejected (kept so the work is not optimised away).
    pub rejects: u64,
    /// Orders checked.
    pub checked: u32,
}

impl Risk {
    /// Tables with every limit generous enough that most orders pass.
    pub fn new(rounds: u32) -> Risk {
        let mut limits = Box::new(
            [Limit {
                max_position: 0,
                max_notional: 0,
            }; CLIENTS],
        );
        for (i, l) in limits.iter_mut().enumerate() {
            l.max_position = 5_000 + 10 * i as i64;
            l.max_notional = l.max_position * 10_100;
        }
        Risk {
            positions: Box::new([0; SYMBOLS]),
            limits,
            velocity: Box::new([[0; WINDOW]; CLIENTS]),
            heads: Box::new([0; CLIENTS]),
            rounds,
            rejects: 0,
            checked: 0,
        }
    }

    /// Checks one order: position delta, position and notional limits, and how many of
    /// the client's last orders fall within `window_ticks` of this one. Stamps the
    /// order's `risk_seq`.
    #[inline(always)]
    pub fn check(&mut self, o: &mut Order, window_ticks: u64) -> bool {
        let sym = o.symbol_id as usize % SYMBOLS;
        let cli = o.client_id as usize % CLIENTS;
        let delta = match o.side {
            Side::Buy => i64::from(o.qty),
            Side::Sell => -i64::from(o.qty),
        };
        let position = self.positions[sym] + delta;
        let limit = self.limits[cli];
        let mut ok = position.abs() <= limit.max_position
            && position.abs().saturating_mul(o.price) <= limit.max_notional;
        let head = self.heads[cli] as usize;
        let window = &mut self.velocity[cli];
        window[head] = o.ts_create_tsc;
        self.heads[cli] = ((head + 1) % WINDOW) as u8;
        let mut recent = 0u32;
        for _ in 0..=self.rounds {
            let w = black_box(&*window);
            recent = w
                .iter()
                .map(|&t| u32::from(o.ts_create_tsc.wrapping_sub(t) < window_ticks))
                .sum();
        }
        ok &= recent <= WINDOW as u32;
        if ok {
            self.positions[sym] = position;
        } else {
            self.rejects += 1;
        }
        self.checked = self.checked.wrapping_add(1);
        o.risk_seq = self.checked;
        ok
    }
}

/// Finds the `rounds` that bring one check to about `target_ns` on the calling
/// thread's core, and returns it with the measured cost of one check at that setting.
pub fn calibrate(target_ns: f64, clock: &handoff_clock::Clock) -> (u32, f64) {
    let cost = |rounds: u32| -> f64 {
        let mut risk = Risk::new(rounds);
        let n = 20_000u64;
        let mut orders: Vec<Order> = (0..1024).map(Order::new).collect();
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t = clock.start();
            for i in 0..n {
                let o = &mut orders[(i % 1024) as usize];
                o.ts_create_tsc = i;
                black_box(risk.check(o, 1_000));
            }
            let ns = clock.ticks_to_ns(clock.end().saturating_sub(t)) as f64 / n as f64;
            best = best.min(ns);
        }
        best
    };
    let base = cost(0);
    let step = ((cost(64) - base) / 64.0).max(0.01);
    let mut rounds = ((target_ns - base) / step).round().clamp(0.0, 1e6) as u32;
    // One correction from a measurement at the estimate.
    let at = cost(rounds);
    let fix = ((target_ns - at) / step).round();
    rounds = (rounds as f64 + fix).clamp(0.0, 1e6) as u32;
    (rounds, cost(rounds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_are_one_cache_line_and_self_checking() {
        assert_eq!(std::mem::size_of::<Order>(), 64);
        let o = Order::new(12345);
        assert!(o.is(12345));
        assert!(!o.is(12346));
    }

    #[test]
    fn the_check_moves_positions_and_stamps_the_order() {
        let mut risk = Risk::new(0);
        let mut o = Order::new(0);
        assert!(risk.check(&mut o, 100));
        assert_eq!(o.risk_seq, 1);
        assert_eq!(risk.positions[0], 1);
        // A position beyond the client's limit is rejected.
        let mut big = Order::new(0);
        big.qty = 1_000_000;
        assert!(!risk.check(&mut big, 100));
        assert_eq!(risk.rejects, 1);
    }
}
