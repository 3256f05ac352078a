//! ds4-engine
