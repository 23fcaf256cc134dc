// SPDX-License-Identifier: Apache-2.0
// The numerics contract (hw/spec/NUMERICS.md) as functions, so that the
// array can evaluate a whole row of PEs in one loop (see systole_pe_row)
// and every other user shares the same text. The modules systole_bf16_mul,
// systole_fp32_add, systole_fp32_canonical and systole_fp32_to_bf16 wrap
// them one to one; the arithmetic tests check those wrappers exhaustively
// or with tens of millions of random pairs.
package systole_arith;

  // bf16 x bf16 -> fp32 product ("Product"). The 8-bit significands multiply
  // to 16 bits, so the product is exact unless it leaves the fp32 normal
  // range: then +-Inf above, a signed zero below. Subnormal inputs read as
  // zero; Inf x 0 and NaN give the canonical NaN.
  function automatic logic [31:0] bf16_mul(logic [15:0] a, logic [15:0] b);
    logic              sign, a_nan, b_nan, a_inf, b_inf, a_zero, b_zero;
    logic [7:0]        a_exp, b_exp;
    logic [15:0]       significand;  // (1.fa * 1.fb) * 2^14, in [2^14, 2^16)
    logic signed [9:0] exponent;     // biased exponent of the product
    logic [22:0]       fraction;
    sign        = a[15] ^ b[15];
    a_exp       = a[14:7];
    b_exp       = b[14:7];
    a_nan       = (a_exp == 8'hFF) && (a[6:0] != '0);
    b_nan       = (b_exp == 8'hFF) && (b[6:0] != '0);
    a_inf       = (a_exp == 8'hFF) && (a[6:0] == '0);
    b_inf       = (b_exp == 8'hFF) && (b[6:0] == '0);
    a_zero      = a_exp == '0;  // zero or subnormal
    b_zero      = b_exp == '0;
    significand = {1'b1, a[6:0]} * {1'b1, b[6:0]};
    exponent    = $signed({2'b00, a_exp}) + $signed({2'b00, b_exp}) - 10'sd127;
    fraction    = {significand[13:0], 9'b0};
    if (significand[15]) begin  // product in [2, 4): renormalise
      exponent = exponent + 10'sd1;
      fraction = {significand[14:0], 8'b0};
    end
    if (a_nan || b_nan || (a_inf && b_zero) || (b_inf && a_zero)) bf16_mul = systole_pkg::Fp32CanonicalNan;
    else if (a_inf || b_inf) bf16_mul = {sign, 8'hFF, 23'b0};
    else if (a_zero || b_zero || exponent <= 0) bf16_mul = {sign, 31'b0};  // zero, or below the range
    else if (exponent >= 10'sd255) bf16_mul = {sign, 8'hFF, 23'b0};
    else bf16_mul = {sign, exponent[7:0], fraction};
  endfunction

  // A nonzero 27-bit significand shifted left until its top bit is set,
  // with the shift: {shift (5 bits), significand (27 bits)}. A five-step
  // binary search is the leading-zero count and the normalising shifter in
  // one (a 27-way priority chain costs the simulator five times more, and a
  // separate shifter costs LUTs).
  function automatic logic [31:0] normalize27(logic [26:0] value);
    logic [26:0] v;
    logic [4:0]  n;
    v = value;
    n = '0;
    if (v[26:11] == '0) begin n = n + 5'd16; v = v << 16; end
    if (v[26:19] == '0) begin n = n + 5'd8;  v = v << 8;  end
    if (v[26:23] == '0) begin n = n + 5'd4;  v = v << 4;  end
    if (v[26:25] == '0) begin n = n + 5'd2;  v = v << 2;  end
    if (!v[26])         begin n = n + 5'd1;  v = v << 1;  end
    normalize27 = {n, v};
  endfunction

  // Trailing zeros of a nonzero 27-bit significand, by the same search.
  function automatic logic [4:0] trailing_zeros27(logic [26:0] value);
    logic [26:0] v;
    v = value;
    trailing_zeros27 = '0;
    if (v[15:0] == '0) begin trailing_zeros27 = trailing_zeros27 + 5'd16; v = v >> 16; end
    if (v[7:0] == '0)  begin trailing_zeros27 = trailing_zeros27 + 5'd8;  v = v >> 8;  end
    if (v[3:0] == '0)  begin trailing_zeros27 = trailing_zeros27 + 5'd4;  v = v >> 4;  end
    if (v[1:0] == '0)  begin trailing_zeros27 = trailing_zeros27 + 5'd2;  v = v >> 2;  end
    if (!v[0])         trailing_zeros27 = trailing_zeros27 + 5'd1;
  endfunction

  // fp32 + fp32 ("Sum"): round to nearest even with guard, round and sticky
  // bits; a result below 2^-126 becomes a zero of its sign (such sums are
  // exact, so no rounding precedes the flush); exact cancellation gives +0;
  // Inf - Inf and NaN give the canonical NaN. Inputs with a zero exponent
  // field read as zero.
  function automatic logic [31:0] fp32_add(logic [31:0] a, logic [31:0] b);
    localparam int unsigned Width = 27;  // hidden bit, 23 fraction bits, guard, round, sticky
    logic              a_nan, b_nan, a_inf, b_inf, a_zero, b_zero, subtract, sticky, round_up;
    logic [31:0]       larger, smaller, normalized;
    logic [7:0]        shift;
    logic [Width-1:0]  larger_sig, smaller_sig, aligned, normal;
    logic [Width:0]    operand, total;  // one carry bit
    logic signed [9:0] exponent;
    logic [24:0]       rounded;  // hidden bit + fraction + carry
    a_nan       = (a[30:23] == 8'hFF) && (a[22:0] != '0);
    b_nan       = (b[30:23] == 8'hFF) && (b[22:0] != '0);
    a_inf       = (a[30:23] == 8'hFF) && (a[22:0] == '0);
    b_inf       = (b[30:23] == 8'hFF) && (b[22:0] == '0);
    a_zero      = a[30:23] == '0;
    b_zero      = b[30:23] == '0;
    // The operand of larger magnitude first.
    larger      = (b[30:0] > a[30:0]) ? b : a;
    smaller     = (b[30:0] > a[30:0]) ? a : b;
    subtract    = larger[31] != smaller[31];
    shift       = larger[30:23] - smaller[30:23];
    larger_sig  = {1'b1, larger[22:0], 3'b000};
    smaller_sig = {1'b1, smaller[22:0], 3'b000};
    // Align the smaller significand; sticky is set when a one is shifted
    // out, that is when the shift passes its trailing zeros.
    aligned = shift >= 8'(Width) ? '0 : smaller_sig >> shift;
    sticky  = shift > {3'b000, trailing_zeros27(smaller_sig)};
    // One adder for both signs: a - b = a + ~b + 1.
    operand    = {1'b0, aligned[Width-1:1], aligned[0] | sticky};
    total      = {1'b0, larger_sig} + (subtract ? ~operand : operand) + (Width+1)'(subtract);
    normalized = normalize27(total[Width-1:0]);
    exponent   = $signed({2'b00, larger[30:23]});
    if (!subtract && total[Width]) begin  // carry: shift right, keep the sticky
      normal   = {total[Width:2], total[1] | total[0]};
      exponent = exponent + 10'sd1;
    end else if (!subtract) begin
      normal = total[Width-1:0];
    end else begin
      normal   = normalized[Width-1:0];
      exponent = exponent - $signed({5'b0, normalized[31:27]});
    end
    round_up = normal[2] && (normal[1] || normal[0] || normal[3]);
    rounded  = {1'b0, normal[Width-1:3]} + 25'(round_up);
    if (rounded[24]) begin
      rounded  = rounded >> 1;
      exponent = exponent + 10'sd1;
    end
    if (a_nan || b_nan || (a_inf && b_inf && (a[31] != b[31]))) fp32_add = systole_pkg::Fp32CanonicalNan;
    else if (a_inf) fp32_add = a;
    else if (b_inf) fp32_add = b;
    else if (a_zero && b_zero) fp32_add = {a[31] & b[31], 31'b0};  // -0 only when both are -0
    else if (a_zero) fp32_add = b;
    else if (b_zero) fp32_add = a;
    else if (total[Width-1:0] == '0 && subtract) fp32_add = 32'b0;  // exact cancellation
    else if (exponent <= 0) fp32_add = {larger[31], 31'b0};  // below the normal range: flush
    else if (exponent >= 10'sd255) fp32_add = {larger[31], 8'hFF, 23'b0};
    else fp32_add = {larger[31], exponent[7:0], rounded[22:0]};
  endfunction

  // The vector engine's fp32 operations (NUMERICS.md, "The vector engine"):
  // IEEE-754 with round to nearest even, operands with a zero exponent field
  // read as zeros, and a result that is tiny after rounding (below 2^-126
  // once rounded to 24 bits with an unbounded exponent) flushed to a zero of
  // its sign; NaNs come out canonical. fp32_add above already follows these
  // rules: a sum below 2^-126 is exact, so it is tiny before and after
  // rounding alike.

  // A 24-bit significand with its round and sticky bits, rounded to nearest
  // even, and the exponent adjusted by a carry out of the significand; then
  // flushed (tiny after rounding), saturated to Inf, or packed.
  function automatic logic [31:0] fp32_pack(logic sign, logic signed [10:0] exponent,
                                            logic [23:0] significand, logic round, logic sticky);
    logic [24:0]       rounded;
    logic signed [10:0] e;
    rounded = {1'b0, significand} + 25'(round && (sticky || significand[0]));
    e       = exponent;
    if (rounded[24]) begin
      rounded = rounded >> 1;
      e       = e + 11'sd1;
    end
    if (e <= 0) fp32_pack = {sign, 31'b0};
    else if (e >= 11'sd255) fp32_pack = {sign, 8'hFF, 23'b0};
    else fp32_pack = {sign, e[7:0], rounded[22:0]};
  endfunction

  // Of a value's magnitude (bits 30..0).
  function automatic logic fp32_is_nan(logic [30:0] magnitude);
    fp32_is_nan = (magnitude[30:23] == 8'hFF) && (magnitude[22:0] != '0);
  endfunction
  function automatic logic fp32_is_inf(logic [30:0] magnitude);
    fp32_is_inf = (magnitude[30:23] == 8'hFF) && (magnitude[22:0] == '0);
  endfunction

  // fp32 - fp32: the sum with b's sign turned (a NaN's sign does not matter,
  // NaNs come out canonical).
  function automatic logic [31:0] fp32_sub(logic [31:0] a, logic [31:0] b);
    fp32_sub = fp32_add(a, {~b[31], b[30:0]});
  endfunction

  // fp32 x fp32: the 48-bit product of the significands, rounded once.
  function automatic logic [31:0] fp32_mul(logic [31:0] a, logic [31:0] b);
    logic               sign, a_zero, b_zero, a_inf, b_inf, nan;
    logic [47:0]        product;  // in [2^46, 2^48)
    logic signed [10:0] exponent;
    sign     = a[31] ^ b[31];
    a_zero   = a[30:23] == '0;
    b_zero   = b[30:23] == '0;
    product  = {1'b1, a[22:0]} * {1'b1, b[22:0]};
    exponent = $signed({3'b000, a[30:23]}) + $signed({3'b000, b[30:23]}) - 11'sd127;
    a_inf    = fp32_is_inf(a[30:0]);
    b_inf    = fp32_is_inf(b[30:0]);
    nan      = fp32_is_nan(a[30:0]) || fp32_is_nan(b[30:0]) || (a_inf && b_zero) || (b_inf && a_zero);
    if (nan) fp32_mul = systole_pkg::Fp32CanonicalNan;
    else if (a_inf || b_inf) fp32_mul = {sign, 8'hFF, 23'b0};
    else if (a_zero || b_zero) fp32_mul = {sign, 31'b0};
    else if (product[47])
      fp32_mul = fp32_pack(sign, exponent + 11'sd1, product[47:24], product[23], product[22:0] != '0);
    else fp32_mul = fp32_pack(sign, exponent, product[46:23], product[22], product[21:0] != '0);
  endfunction

  // fp32 / fp32: 26 quotient bits of the significands, one a step by
  // restoring division (a comparison and a subtraction of 25 bits each;
  // a `/` and `%` of the 49-bit dividend would each map to a divider twice
  // as wide), and the remainder (sticky), rounded once.
  function automatic logic [31:0] fp32_div(logic [31:0] a, logic [31:0] b);
    logic               sign, a_zero, b_zero, a_inf, b_inf, nan;
    logic [23:0]        divisor;
    logic [25:0]        remainder;  // below 2 divisor
    logic [25:0]        quotient;   // (ma / mb) 2^25, in (2^24, 2^26)
    logic signed [10:0] exponent;
    sign      = a[31] ^ b[31];
    a_zero    = a[30:23] == '0;
    b_zero    = b[30:23] == '0;
    divisor   = {1'b1, b[22:0]};
    remainder = 26'({1'b1, a[22:0]});
    for (int i = 25; i >= 0; i--) begin
      quotient[i] = remainder >= 26'(divisor);
      if (quotient[i]) remainder = remainder - 26'(divisor);
      remainder = {remainder[24:0], 1'b0};
    end
    exponent = $signed({3'b000, a[30:23]}) - $signed({3'b000, b[30:23]}) + 11'sd127;
    a_inf    = fp32_is_inf(a[30:0]);
    b_inf    = fp32_is_inf(b[30:0]);
    nan      = fp32_is_nan(a[30:0]) || fp32_is_nan(b[30:0]) || (a_inf && b_inf) || (a_zero && b_zero);
    if (nan) fp32_div = systole_pkg::Fp32CanonicalNan;
    else if (a_inf || b_zero) fp32_div = {sign, 8'hFF, 23'b0};
    else if (a_zero || b_inf) fp32_div = {sign, 31'b0};
    else if (quotient[25])
      fp32_div = fp32_pack(sign, exponent, quotient[25:2], quotient[1], quotient[0] || remainder != '0);
    else fp32_div = fp32_pack(sign, exponent - 11'sd1, quotient[24:1], quotient[0], remainder != '0);
  endfunction

  // sqrt(fp32): the significand scaled so that its exponent is even and its
  // root has 26 bits, rooted digit by digit (the remainder is the sticky
  // bit). A root is never tiny and never overflows; sqrt(-0) is -0, a
  // negative number's root the canonical NaN.
  function automatic logic [31:0] fp32_sqrt(logic [31:0] a);
    logic [51:0]        radicand;  // in [2^50, 2^52)
    logic [25:0]        root;
    logic [29:0]        remainder, trial;  // a remainder stays below 2 root + 2
    logic signed [10:0] unbiased;
    unbiased  = $signed({3'b000, a[30:23]}) - 11'sd127;
    // An odd exponent takes one more bit of the significand into the root.
    radicand  = unbiased[0] ? {1'b1, a[22:0], 28'b0} : {1'b0, 1'b1, a[22:0], 27'b0};
    root      = '0;
    remainder = '0;
    for (int i = 25; i >= 0; i--) begin
      remainder = {remainder[27:0], radicand[2*i +: 2]};
      trial     = 30'({root, 2'b01});
      if (remainder >= trial) begin
        remainder = remainder - trial;
        root      = {root[24:0], 1'b1};
      end else begin
        root = {root[24:0], 1'b0};
      end
    end
    if (fp32_is_nan(a[30:0])) fp32_sqrt = systole_pkg::Fp32CanonicalNan;
    else if (a[30:23] == '0) fp32_sqrt = {a[31], 31'b0};
    else if (a[31]) fp32_sqrt = systole_pkg::Fp32CanonicalNan;
    else if (fp32_is_inf(a[30:0])) fp32_sqrt = a;
    else
      fp32_sqrt = fp32_pack(1'b0, (unbiased >>> 1) + 11'sd127, root[25:2], root[1], root[0] || remainder != '0);
  endfunction

  // An fp32 value read from memory as the datapath sees it ("Input
  // canonicalisation"): subnormal -> zero of its sign, NaN -> the canonical NaN.
  function automatic logic [31:0] fp32_canonical(logic [31:0] value);
    if (value[30:23] == 8'hFF && value[22:0] != '0) fp32_canonical = systole_pkg::Fp32CanonicalNan;
    else if (value[30:23] == '0) fp32_canonical = {value[31], 31'b0};
    else fp32_canonical = value;
  endfunction

  // fp32 -> bf16: NaN -> 0x7FC0; a zero or subnormal input -> zero of its
  // sign (flushed before rounding); otherwise round to nearest, ties to even,
  // at bit 16, a carry out of the largest finite giving Inf.
  function automatic logic [15:0] fp32_to_bf16(logic [31:0] value);
    logic round_up;
    round_up = value[15] && ((value[14:0] != '0) || value[16]);
    if (value[30:23] == 8'hFF && value[22:0] != '0) fp32_to_bf16 = systole_pkg::Bf16CanonicalNan;
    else if (value[30:23] == '0) fp32_to_bf16 = {value[31], 15'b0};
    else fp32_to_bf16 = value[31:16] + 16'(round_up);  // carries into Inf on overflow
  endfunction
endpackage
