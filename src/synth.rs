//! Synthetic sweeps (placeholder until written).
