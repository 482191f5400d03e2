//! One chain's side of a velocity swap with a chain on another rank.
//!
//! Replica exchange keeps a velocity with its rung ([`crate::sampler::ReplicaExchange`]): when
//! two replicas trade rungs, their kernel states trade places and the velocity is shifted to
//! the position it now drives, `v_a <- v_b + l_a (g_a - g_b)`, `v_b <- v_a - l_b (g_a - g_b)`
//! ([`super::Ensemble::swap_kernel_state`]). When the two chains live on different ranks, each
//! rank sends its chain's [`KernelRow`] (kernel state and last gradient) to the other and
//! applies its own half of the same update ([`super::Ensemble::take_kernel_row`]), in the same
//! floating-point operations, so the run is the one-process run bit for bit.

use crate::error::SamplerError;

/// A chain's kernel state (every slot) and the gradient of its last estimate, per parameter
/// tensor in visit order (one tensor for host chains).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelRow {
    /// The parameter tensors' rows.
    pub params: Vec<ParamRow>,
}

/// The other chain's half of a swap as this rank's chain takes it
/// ([`super::Ensemble::take_kernel_row`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RowSwap {
    /// The other chain's kernel row.
    pub peer: KernelRow,
    /// The velocity lag of this rank's chain at its new rung.
    pub lag: f64,
    /// Whether this rank's chain is the swap's first chain `a` (the one on the lower rung).
    pub first: bool,
}

/// One parameter tensor's row of a [`KernelRow`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParamRow {
    /// The chain's row of each kernel state slot (none before the first move).
    pub slots: Vec<Vec<f64>>,
    /// The chain's row of the last gradient.
    pub grad: Option<Vec<f64>>,
}

impl KernelRow {
    /// The row as one vector of numbers (counts written as exact integers): `[params, then per
    /// parameter: slots, width, the slots' values, 1 and the gradient or 0]`.
    pub fn to_values(&self) -> Vec<f64> {
        let mut v = vec![self.params.len() as f64];
        for p in &self.params {
            let width = p
                .slots
                .first()
                .or(p.grad.as_ref())
                .map_or(0, std::vec::Vec::len);
            v.extend([p.slots.len() as f64, width as f64]);
            for s in &p.slots {
                v.extend_from_slice(s);
            }
            match &p.grad {
                Some(g) => {
                    v.push(1.0);
                    v.extend_from_slice(g);
                }
                None => v.push(0.0),
            }
        }
        v
    }

    /// The row [`KernelRow::to_values`] wrote; errors on a malformed vector.
    pub fn from_values(v: &[f64]) -> Result<Self, SamplerError> {
        let mut at = 0usize;
        let mut next = |n: usize| -> Result<&[f64], SamplerError> {
            let out = v.get(at..at + n).ok_or_else(|| {
                SamplerError::Communication(format!(
                    "a kernel row of {} values ends early (at {at} of {})",
                    v.len(),
                    at + n
                ))
            })?;
            at += n;
            Ok(out)
        };
        let count = |x: f64| -> Result<usize, SamplerError> {
            if x >= 0.0 && x.fract() == 0.0 && x < 1e15 {
                Ok(x as usize)
            } else {
                Err(SamplerError::Communication(format!(
                    "a kernel row holds {x} where a count belongs"
                )))
            }
        };
        let params = count(next(1)?[0])?;
        let mut row = Self::default();
        for _ in 0..params {
            let head = next(2)?;
            let (slots, width) = (count(head[0])?, count(head[1])?);
            let slots = (0..slots)
                .map(|_| next(width).map(<[f64]>::to_vec))
                .collect::<Result<Vec<_>, _>>()?;
            let grad = match next(1)?[0] {
                1.0 => Some(next(width)?.to_vec()),
                _ => None,
            };
            row.params.push(ParamRow { slots, grad });
        }
        if at != v.len() {
            return Err(SamplerError::Communication(format!(
                "a kernel row of {} values has {} left over",
                v.len(),
                v.len() - at
            )));
        }
        Ok(row)
    }
}

/// `t_peer + lag (g_own - g_peer)` for the swap's first chain, `t_peer - lag (g_peer - g_own)`
/// for the second, elementwise in `f64` (host chains): the one-process swap's operations.
pub fn shifted(peer: &[f64], own_g: &[f64], peer_g: &[f64], lag: f64, first: bool) -> Vec<f64> {
    peer.iter()
        .zip(own_g.iter().zip(peer_g))
        .map(|(t, (o, p))| {
            if first {
                t + lag * (o - p)
            } else {
                t - lag * (p - o)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_survive_their_values_and_malformed_values_are_refused() {
        let row = KernelRow {
            params: vec![
                ParamRow {
                    slots: vec![vec![1.5, -2.0], vec![0.25, 3.0]],
                    grad: Some(vec![7.0, -0.125]),
                },
                ParamRow {
                    slots: Vec::new(),
                    grad: None,
                },
            ],
        };
        let v = row.to_values();
        assert_eq!(KernelRow::from_values(&v).unwrap(), row);
        assert!(KernelRow::from_values(&v[..v.len() - 1]).is_err());
        let mut longer = v.clone();
        longer.push(0.0);
        assert!(KernelRow::from_values(&longer).is_err());
        assert!(KernelRow::from_values(&[0.5]).is_err());
        // The two halves of a swap: v_a = v_b + l_a (g_a - g_b), v_b = v_a - l_b (g_a - g_b).
        let (va, vb, ga, gb) = ([1.0], [2.0], [0.5], [0.25]);
        assert_eq!(
            shifted(&vb, &ga, &gb, 0.1, true),
            [2.0 + 0.1 * (0.5 - 0.25)]
        );
        assert_eq!(
            shifted(&va, &gb, &ga, 0.2, false),
            [1.0 - 0.2 * (0.5 - 0.25)]
        );
    }
}
