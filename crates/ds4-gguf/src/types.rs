//! GGML tensor types: ids, block sizes and byte sizes (MODEL.md §4.1, §5).

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GgmlType {
    F32,
    F16,
    Q8_0,
    Q2K,
    Q4K,
    Q8K,
    Iq2Xxs,
    I32,
    Bf16,
}

impl GgmlType {
    pub fn from_id(id: u32) -> Option<GgmlType> {
        Some(match id {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            8 => GgmlType::Q8_0,
            10 => GgmlType::Q2K,
            12 => GgmlType::Q4K,
            15 => GgmlType::Q8K,
            16 => GgmlType::Iq2Xxs,
            26 => GgmlType::I32,
            30 => GgmlType::Bf16,
            _ => return None,
        })
    }

    pub fn id(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q8_0 => 8,
            GgmlType::Q2K => 10,
            GgmlType::Q4K => 12,
            GgmlType::Q8K => 15,
            GgmlType::Iq2Xxs => 16,
            GgmlType::I32 => 26,
            GgmlType::Bf16 => 30,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F32 => "F32",
            GgmlType::F16 => "F16",
            GgmlType::Q8_0 => "Q8_0",
            GgmlType::Q2K => "Q2_K",
            GgmlType::Q4K => "Q4_K",
            GgmlType::Q8K => "Q8_K",
            GgmlType::Iq2Xxs => "IQ2_XXS",
            GgmlType::I32 => "I32",
            GgmlType::Bf16 => "BF16",
        }
    }

    /// Values per block.
    pub fn block_len(self) -> usize {
        match self {
            GgmlType::F32 | GgmlType::F16 | GgmlType::I32 | GgmlType::Bf16 => 1,
            GgmlType::Q8_0 => 32,
            GgmlType::Q2K | GgmlType::Q4K | GgmlType::Q8K | GgmlType::Iq2Xxs => 256,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            GgmlType::F32 | GgmlType::I32 => 4,
            GgmlType::F16 | GgmlType::Bf16 => 2,
            GgmlType::Q8_0 => 34,
            GgmlType::Q2K => 84,
            GgmlType::Q4K => 144,
            GgmlType::Q8K => 292,
            GgmlType::Iq2Xxs => 66,
        }
    }

    /// Bytes for `n` values (rounded up to whole blocks), None on overflow.
    pub fn bytes_for(self, n: u64) -> Option<u64> {
        let bl = self.block_len() as u64;
        n.checked_add(bl - 1).map(|v| v / bl)?.checked_mul(self.block_bytes() as u64)
    }

    /// Bytes of one row of `n` values; rows must hold whole blocks.
    pub fn row_bytes(self, n: usize) -> usize {
        debug_assert!(n % self.block_len() == 0);
        n / self.block_len() * self.block_bytes()
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
