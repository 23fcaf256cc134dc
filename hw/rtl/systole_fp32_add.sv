// fp32 + fp32 (hw/spec/NUMERICS.md, "Sum"): round to nearest even with guard,
// round and sticky bits; a result below 2^-126 becomes a zero of its sign
// (such sums are exact, so no rounding precedes the flush); exact
// cancellation gives +0; Inf - Inf and NaN give the canonical NaN. Inputs
// with a zero exponent field read as zero.
module systole_fp32_add (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] sum_o
);

  // Significand with hidden bit, 23 fraction bits, guard, round, sticky.
  localparam int unsigned Width = 27;

  logic a_nan, b_nan, a_inf, b_inf, a_zero, b_zero;
  logic [31:0] larger, smaller;
  logic [7:0] shift;
  logic [Width-1:0] larger_sig, smaller_sig, aligned;
  logic smaller_sticky;
  logic [Width:0] total;  // one carry bit
  logic [Width-1:0] normal;
  logic signed [9:0] exponent;
  logic [4:0] leading_zeros;
  logic round_up;
  logic [24:0] rounded;  // hidden bit + fraction + carry

  assign a_nan  = (a_i[30:23] == 8'hFF) && (a_i[22:0] != '0);
  assign b_nan  = (b_i[30:23] == 8'hFF) && (b_i[22:0] != '0);
  assign a_inf  = (a_i[30:23] == 8'hFF) && (a_i[22:0] == '0);
  assign b_inf  = (b_i[30:23] == 8'hFF) && (b_i[22:0] == '0);
  assign a_zero = (a_i[30:23] == '0);
  assign b_zero = (b_i[30:23] == '0);

  // The operand of larger magnitude first.
  assign larger   = (b_i[30:0] > a_i[30:0]) ? b_i : a_i;
  assign smaller = (b_i[30:0] > a_i[30:0]) ? a_i : b_i;
  assign shift = larger[30:23] - smaller[30:23];
  assign larger_sig   = {1'b1, larger[22:0], 3'b000};
  assign smaller_sig = {1'b1, smaller[22:0], 3'b000};

  // Align the smaller significand; every bit shifted out sets sticky.
  always_comb begin
    if (shift >= 8'(Width)) begin
      aligned = '0;
      smaller_sticky = 1'b1;
    end else begin
      aligned = smaller_sig >> shift;
      smaller_sticky = (smaller_sig & ((Width'(1) << shift) - Width'(1))) != '0;
    end
  end

  // Leading zeros of a nonzero significand: the last assignment wins, which
  // is the highest set bit (no `break`, which yosys does not read).
  function automatic logic [4:0] count_leading_zeros(logic [Width-1:0] value);
    count_leading_zeros = 5'd0;
    for (int i = 0; i < Width; i++) begin
      if (value[i]) count_leading_zeros = 5'(Width - 1 - i);
    end
  endfunction

  always_comb begin
    exponent = $signed({2'b00, larger[30:23]});
    total = '0;
    normal = '0;
    leading_zeros = '0;
    if (larger[31] == smaller[31]) begin
      total = {1'b0, larger_sig} + {1'b0, aligned[Width-1:1], aligned[0] | smaller_sticky};
      if (total[Width]) begin  // carry: shift right, keep the sticky
        normal = {total[Width:2], total[1] | total[0]};
        exponent = exponent + 10'sd1;
      end else begin
        normal = total[Width-1:0];
      end
    end else begin
      total = {1'b0, larger_sig} - {1'b0, aligned[Width-1:1], aligned[0] | smaller_sticky};
      leading_zeros = count_leading_zeros(total[Width-1:0]);
      normal = total[Width-1:0] << leading_zeros;
      exponent = exponent - $signed({5'b0, leading_zeros});
    end
    round_up = normal[2] && (normal[1] || normal[0] || normal[3]);
    rounded = {1'b0, normal[Width-1:3]} + 25'(round_up);
    if (rounded[24]) begin
      rounded = rounded >> 1;
      exponent = exponent + 10'sd1;
    end
  end

  always_comb begin
    if (a_nan || b_nan || (a_inf && b_inf && (a_i[31] != b_i[31]))) begin
      sum_o = systole_pkg::Fp32CanonicalNan;
    end else if (a_inf) begin
      sum_o = a_i;
    end else if (b_inf) begin
      sum_o = b_i;
    end else if (a_zero && b_zero) begin
      sum_o = {a_i[31] & b_i[31], 31'b0};  // -0 only when both are -0
    end else if (a_zero) begin
      sum_o = b_i;
    end else if (b_zero) begin
      sum_o = a_i;
    end else if (total[Width-1:0] == '0 && larger[31] != smaller[31]) begin
      sum_o = 32'b0;  // exact cancellation
    end else if (exponent <= 0) begin
      sum_o = {larger[31], 31'b0};  // below the normal range: flush
    end else if (exponent >= 10'sd255) begin
      sum_o = {larger[31], 8'hFF, 23'b0};
    end else begin
      sum_o = {larger[31], exponent[7:0], rounded[22:0]};
    end
  end
endmodule
