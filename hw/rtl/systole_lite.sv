// SPDX-License-Identifier: Apache-2.0
// The compact kernel for small FPGAs: the same compute core (systole_core),
// the same register map and command lists as systole_kernel, but one 32-bit
// memory port and a sequential controller instead of the port groups and
// engines, so that it fits an iCE40 UP5K. It validates a whole list before
// running any of it, with the checks and precedence of hw/spec's validate.h,
// and then runs each descriptor N tile by N tile:
//
//   bias    the N tile's bias (with the bias flag)
//   init    each row's starting values: C (accumulate) or +0
//   K tiles weights (Rows x Cols elements, then Rows shifts, bottom row
//           first), each row's activation vector (Rows elements) into the
//           array, then the array drains
//   readout each row through the output stage, its Cols elements stored
//
// One element per memory access, one access at a time: the kernel is bound
// by its port, not by the array (docs/kernel-interface.md, "The compact
// kernel", has the cycle counts). The core's accumulator bank 0 and weight
// bank 0 serve every tile, since nothing overlaps.
//
// What differs from systole_kernel, all readable in the ID registers or
// refused: max_m is MaxM (the accumulator rows the board's block RAM
// holds); beat_bytes is 4; the device memory is MemBytes at address 0, so
// every port base must be 0 and mem_bytes at most MemBytes (a write of
// anything else, or of a 64-bit register's high word other than 0, gets
// SLVERR); the counters are CounterBits wide (their high words read the
// bits above 32); the DMA counters count the bytes of each 32-bit access.
`include "systole_assert.svh"

module systole_lite #(
  parameter int unsigned Rows        = 2,
  parameter int unsigned Cols        = 1,
  parameter int unsigned MaxM        = 256,
  parameter int unsigned MemBytes    = 131072,
  parameter int unsigned CounterBits = 32,
  localparam int unsigned AddrBits   = $clog2(MemBytes) + 1,  // byte addresses, one bit beyond
  localparam int unsigned WordBits   = $clog2(MemBytes) - 2,
  localparam int unsigned RowBits    = $clog2(MaxM)
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  input  systole_pkg::axil_req_t axil_req_i,
  output systole_pkg::axil_rsp_t axil_rsp_o,
  output logic                   interrupt_o,
  output logic                   busy_o,      // a launch is running (ap_idle low)
  // Device memory: a request is taken when mem_ready_i; a read's word comes
  // back with mem_rvalid_i (one at a time: the kernel waits for it).
  output logic                   mem_valid_o,
  output logic                   mem_write_o,
  output logic [WordBits-1:0]    mem_addr_o,
  output logic [31:0]            mem_wdata_o,
  output logic [3:0]             mem_wstrb_o,
  input  logic                   mem_ready_i,
  input  logic                   mem_rvalid_i,
  input  logic [31:0]            mem_rdata_i
);
  localparam int unsigned MaxK      = systole_pkg::MaxKPerRow * Rows;
  localparam int unsigned MaxN      = systole_pkg::MaxN;
  localparam int unsigned MaxDesc   = systole_pkg::MaxDescriptors;
  localparam int unsigned KBits     = $clog2(MaxK + 1);
  localparam int unsigned NBits     = $clog2(MaxN + 1);
  localparam int unsigned MBits     = $clog2(MaxM + 1);
  localparam int unsigned DescBits  = $clog2(MaxDesc + 1);
  localparam int unsigned Lanes     = Rows > Cols ? Rows : Cols;
  localparam int unsigned ElemBits  = $clog2(Rows * Cols + 1);
  localparam int unsigned LaneBits  = $clog2(Lanes + 1);
  localparam int unsigned AccBits   = AddrBits + RowBits + 4;  // a span's arithmetic
  localparam int unsigned Latency   = Rows + Cols;
  localparam int unsigned DrainBits = $clog2(Latency + 3);

  typedef enum logic [4:0] {
    Idle,
    Header,     // the list's header, word by word
    Desc,       // a descriptor's 16 words (both passes)
    Range,      // an operand's end against mem_bytes
    Tile,       // an N tile begins
    Bias,       // its bias, element by element
    InitRead,   // a row's starting C elements
    Init,       // the row into the accumulators
    Weights,    // the K tile's weights, element by element
    Shift,      // ... into the array, bottom row first
    Act,        // a row's activation elements
    Stream,     // the vector into the array
    Drain,      // the array empties
    Readout,    // a row through the output stage
    Capture,    // its word
    Store,      // its elements to C
    Finish
  } state_e;

  // The list is read a 32-bit word at a time: a record (the header, a
  // descriptor) is one beat of words, and each field's word and bit
  // position come from the package's byte offsets (hw/spec's layout).
  localparam int unsigned RecordWords = systole_pkg::BeatBytes / 4;
  localparam logic [3:0] LastWord     = 4'(RecordWords - 1);
  localparam logic [3:0] MagicWord    = 4'(systole_pkg::HdrMagicByte / 4);
  localparam logic [3:0] VersionWord  = 4'(systole_pkg::HdrVersionMajorByte / 4);
  localparam logic [3:0] CountWord    = 4'(systole_pkg::HdrCountByte / 4);
  localparam logic [3:0] OpcodeWord   = 4'(systole_pkg::DescOpcodeByte / 4);  // with the flags and reserved0
  localparam logic [3:0] MWord        = 4'(systole_pkg::DescMByte / 4);
  localparam logic [3:0] NWord        = 4'(systole_pkg::DescNByte / 4);
  localparam logic [3:0] KWord        = 4'(systole_pkg::DescKByte / 4);
  localparam logic [3:0] LdaWord      = 4'(systole_pkg::DescLdaByte / 4);
  localparam logic [3:0] LdbWord      = 4'(systole_pkg::DescLdbByte / 4);
  localparam logic [3:0] LdcWord      = 4'(systole_pkg::DescLdcByte / 4);
  localparam logic [3:0] Reserved1Word = 4'(systole_pkg::DescReserved1Byte / 4);
  // An address's low word; its high word follows.
  localparam logic [3:0] AWord        = 4'(systole_pkg::DescAAddrByte / 4);
  localparam logic [3:0] BWord        = 4'(systole_pkg::DescBAddrByte / 4);
  localparam logic [3:0] CWord        = 4'(systole_pkg::DescCAddrByte / 4);
  localparam logic [3:0] BiasWord     = 4'(systole_pkg::DescBiasAddrByte / 4);
  localparam int unsigned VersionAt   = 8 * (systole_pkg::HdrVersionMajorByte % 4);
  localparam int unsigned OpcodeAt    = 8 * (systole_pkg::DescOpcodeByte % 4);
  localparam int unsigned FlagsAt     = 8 * (systole_pkg::DescFlagsByte % 4);
  localparam int unsigned Reserved0At = 8 * (systole_pkg::DescReserved0Byte % 4);
  // A GEMM's flags are the low bits of their byte.
  localparam int unsigned FlagBits    = $clog2(systole_pkg::FlagAll + 1);
  if (RecordWords != 16 || systole_pkg::DescFlagsByte / 4 != systole_pkg::DescOpcodeByte / 4 ||
      systole_pkg::DescReserved0Byte / 4 != systole_pkg::DescOpcodeByte / 4 || Reserved0At + 16 != 32 ||
      systole_pkg::FlagAll + 1 != 2 ** FlagBits) begin : g_layout
    $error("the compact kernel reads a 16-word record whose first word holds opcode, flags and reserved0");
  end

  // The operands' spans, checked in this order (validate.h).
  // (yosys 0.23 casts to no user type, so plain constants.)
  localparam logic [1:0] OpA = 2'd0, OpB = 2'd1, OpC = 2'd2, OpBias = 2'd3;

  typedef struct packed {
    state_e                state;
    logic                  exec;      // the second pass: run what the first checked
    logic                  issued;    // the memory has the access at hand
    logic [3:0]            word;      // within the record
    logic [DescBits-1:0]   count, desc;
    logic [3:0]            error;     // the first failing check (codes are in check order)
    // The descriptor, as far as a valid one needs it.
    logic [FlagBits-1:0]   flags;
    logic [MBits-1:0]      m;
    logic [NBits-1:0]      n;
    logic [KBits-1:0]      k;
    logic [AddrBits-1:0]   lda, ldb, ldc, a, b, c, bias;
    logic                  lda_big, ldb_big, ldc_big;  // at least 2^AddrBits
    logic                  a_big, b_big, c_big, bias_big;
    logic [1:0]            op;        // the operand whose range is checked
    // The loops and their pointers (byte addresses).
    logic [NBits-1:0]      n0;
    logic [KBits-1:0]      k0;
    logic [MBits-1:0]      row;
    logic [LaneBits-1:0]   r_at, c_at; // the element's row and column in its tile
    logic [AddrBits-1:0]   next_desc; // the next descriptor
    logic [AddrBits-1:0]   ptr;       // the element or word at hand
    logic [AddrBits-1:0]   line;      // its row of the operand
    logic [AddrBits-1:0]   a_tile;    // A[0][k0]
    logic [AddrBits-1:0]   c_tile;    // C[0][n0]
    logic [AddrBits-1:0]   b_line;    // B[k0][n0]
    logic [DrainBits-1:0]  drain;
    logic [Rows*16-1:0]    act;
    logic [Rows*Cols*16-1:0] weights; // row r, column c at [16 (r Cols + c) +: 16]
    logic [Cols*32-1:0]    lanes;     // starting values, or the row read out
    logic [Cols*32-1:0]    bias_lanes;
  } state_t;

  state_t s_d, s_q;

  // The descriptor's flags.
  logic out_bf16, accumulate, has_bias, relu;
  assign out_bf16   = systole_ctrl_pkg::has_flag(8'(s_q.flags), 8'(systole_pkg::FlagOutputBf16));
  assign accumulate = systole_ctrl_pkg::has_flag(8'(s_q.flags), 8'(systole_pkg::FlagAccumulate));
  assign has_bias   = systole_ctrl_pkg::has_flag(8'(s_q.flags), 8'(systole_pkg::FlagBias));
  assign relu       = systole_ctrl_pkg::has_flag(8'(s_q.flags), 8'(systole_pkg::FlagRelu));

  // ---------------------------------------------------------------------
  // Registers (AXI4-Lite): the control, the list's address, mem_bytes, and
  // the launch's results and counters, read-only.
  logic                   start;
  logic [AddrBits-1:0]    cmd, mem_bytes;
  logic [3:0]             status_q;
  logic                   header_error_q;
  logic [DescBits-1:0]    error_index_q, done_count_q;
  logic [CounterBits-1:0] busy_q, macs_q, read_bytes_q, write_bytes_q, stall_q;
  logic                   busy, finish;

  systole_lite_regs #(
    .Rows(Rows), .Cols(Cols), .MaxM(MaxM), .MaxN(MaxN), .MaxK(MaxK), .MaxDesc(MaxDesc),
    .MemBytes(MemBytes), .CounterBits(CounterBits)
  ) u_regs (
    .clk_i, .rst_ni, .axil_req_i, .axil_rsp_o, .interrupt_o,
    .busy_i(busy), .finish_i(finish), .start_o(start), .cmd_o(cmd), .mem_bytes_o(mem_bytes),
    .status_i(status_q), .header_error_i(header_error_q), .error_index_i(error_index_q),
    .done_count_i(done_count_q), .busy_cycles_i(busy_q), .macs_i(macs_q), .read_bytes_i(read_bytes_q),
    .write_bytes_i(write_bytes_q), .stall_cycles_i(stall_q)
  );
  assign busy = s_q.state != Idle;
  assign busy_o = busy;
  // The core's done flags serve the pipelined kernel's write engine, not
  // this one (it drains the array instead).
  logic unused;
  assign unused = ^{row_done, tile_done};

  // ---------------------------------------------------------------------
  // The core
  logic                 weight_shift, act_valid, act_final, act_last, init_valid;
  logic [Cols*16-1:0]   weight_row;
  logic [Cols*32-1:0]   word;
  logic                 row_done, tile_done;

  systole_core #(.Rows(Rows), .Cols(Cols), .MaxM(MaxM)) u_core (
    .clk_i,
    .rst_ni,
    .weight_shift_i(weight_shift),
    .weight_bank_i (1'b0),
    .weight_i      (weight_row),
    .act_valid_i   (act_valid),
    .act_bank_i    (1'b0),
    .act_i         (s_q.act),
    .act_acc_bank_i(1'b0),
    .act_row_i     (RowBits'(s_q.row)),
    .act_final_i   (act_final),
    .act_last_i    (act_last),
    .row_done_o    (row_done),
    .tile_done_o   (tile_done),
    .init_valid_i  (init_valid),
    .init_bank_i   (1'b0),
    .init_row_i    (RowBits'(s_q.row)),
    .init_i        (s_q.lanes),
    .read_bank_i   (1'b0),
    .read_row_i    (RowBits'(s_q.row)),
    .bias_en_i     (has_bias),
    .relu_en_i     (relu),
    .bf16_en_i     (out_bf16),
    .bias_i        (s_q.bias_lanes),
    .word_o        (word)
  );
  assign weight_row = s_q.weights[16*Cols*(Rows-1) +: 16*Cols];  // the bottom row leaves first

  // ---------------------------------------------------------------------
  // The controller. Written for area (an iCE40 counts every LUT): vectors
  // fill and empty by shifting, not by index; the pointers share one adder
  // each; the range checks share one multiplier (a DSP block); the limits
  // are powers of two, so their checks test bits.
  logic                 access_done, got;
  logic [AddrBits-1:0]  c_step, elem_bytes;
  logic [NBits-1:0]     n_left;
  logic [KBits-1:0]     k_left;
  logic [LaneBits-1:0]  n_eff, k_eff;
  logic                 in_tile;      // the element lies inside the matrix (else +0)
  logic                 last_c, last_r, last_row;
  logic [MBits-1:0]     row_next;
  logic [15:0]          half;         // the bf16 element the word holds
  logic [15:0]          elem16;       // ... or +0 outside the matrix
  logic [3:0]           check;        // the word's verdict
  logic [AccBits-1:0]   span_end;
  logic [AddrBits-1:0]  ptr_step, ptr_next, line_step, line_next;
  logic [31:0]          d;

  assign d          = mem_rdata_i;
  assign elem_bytes = out_bf16 ? AddrBits'(2) : AddrBits'(4);
  assign c_step     = out_bf16 ? AddrBits'({s_q.ldc, 1'b0}) : AddrBits'({s_q.ldc, 2'b00});
  assign n_left     = s_q.n - s_q.n0;
  assign k_left     = s_q.k - s_q.k0;
  assign n_eff      = n_left > NBits'(Cols) ? LaneBits'(Cols) : LaneBits'(n_left);
  assign k_eff      = k_left > KBits'(Rows) ? LaneBits'(Rows) : LaneBits'(k_left);
  assign got        = s_q.issued && mem_rvalid_i;
  assign half       = s_q.ptr[1] ? d[31:16] : d[15:0];
  assign elem16     = in_tile ? half : 16'h0;
  assign finish     = s_q.state == Finish;
  assign last_c     = s_q.c_at == LaneBits'(Cols - 1);
  assign last_r     = s_q.r_at == LaneBits'(Rows - 1);
  assign row_next   = s_q.row + 1'b1;
  assign last_row   = row_next == s_q.m;
  assign ptr_next   = s_q.ptr + ptr_step;
  assign line_next  = s_q.line + line_step;
  // A weight or activation element lies inside K and N, a bias, starting or
  // result element inside N (list words always count).
  always_comb begin
    unique case (s_q.state)
      Weights: in_tile = s_q.r_at < k_eff && s_q.c_at < n_eff;
      Act:     in_tile = s_q.r_at < k_eff;
      Bias, InitRead, Store: in_tile = s_q.c_at < n_eff;
      default: in_tile = 1'b1;
    endcase
  end

  always_comb begin
    unique case (s_q.state)
      Weights, Act:    ptr_step = AddrBits'(2);
      InitRead, Store: ptr_step = elem_bytes;
      default:         ptr_step = AddrBits'(4);  // list words, bias
    endcase
    unique case (s_q.state)
      Weights: line_step = AddrBits'({s_q.ldb, 1'b0});
      Stream:  line_step = AddrBits'({s_q.lda, 1'b0});
      default: line_step = c_step;               // rows of C
    endcase
  end

  // The memory: a read of the element at ptr is requested once, then
  // waited for; a store is taken at once.
  always_comb begin
    mem_valid_o = 1'b0;
    mem_write_o = 1'b0;
    mem_addr_o  = WordBits'(s_q.ptr[AddrBits-1:2]);
    mem_wdata_o = out_bf16 ? {2{s_q.lanes[15:0]}} : s_q.lanes[31:0];
    mem_wstrb_o = !out_bf16 ? 4'b1111 : s_q.ptr[1] ? 4'b1100 : 4'b0011;
    unique case (s_q.state)
      Header, Desc, Bias, InitRead, Weights, Act: mem_valid_o = !s_q.issued && in_tile;
      Store: begin
        mem_valid_o = in_tile;
        mem_write_o = 1'b1;
      end
      default: ;
    endcase
  end
  assign access_done = mem_valid_o && mem_ready_i;

  // One descriptor word's checks (validate.h). The words come in another
  // order than the checks (reserved1 is word 7, after the dimensions), but
  // the codes are numbered in check order, so the smallest code found is the
  // first check that fails. m, n and k are read as
  // stored for the leading dimensions' checks: when one was out of range,
  // a smaller code is already set.
  localparam int unsigned LgM = $clog2(MaxM), LgN = $clog2(MaxN), LgK = $clog2(MaxK);
  always_comb begin
    check = '0;
    unique case (s_q.word)
      OpcodeWord:
        if (d[OpcodeAt +: 8] != 8'(systole_pkg::OpcodeGemm)) check = 4'(systole_pkg::ErrBadOpcode);
        else if ((d[FlagsAt +: 8] | 8'(systole_pkg::FlagAll)) != 8'(systole_pkg::FlagAll) ||
                 d[Reserved0At +: 16] != '0)
          check = 4'(systole_pkg::ErrBadFlags);
      MWord: if (d == '0 || d[31:LgM+1] != '0 || (d[LgM] && d[LgM-1:0] != '0))
              check = 4'(systole_pkg::ErrBadDimension);
      NWord: if (d == '0 || d[31:LgN+1] != '0 || (d[LgN] && d[LgN-1:0] != '0))
              check = 4'(systole_pkg::ErrBadDimension);
      KWord: if (d == '0 || d[31:LgK+1] != '0 || (d[LgK] && d[LgK-1:0] != '0))
              check = 4'(systole_pkg::ErrBadDimension);
      LdaWord: if (d[31:KBits] == '0 && d[KBits-1:0] < s_q.k) check = 4'(systole_pkg::ErrBadLeadingDim);
      LdbWord, LdcWord:
        if (d[31:NBits] == '0 && d[NBits-1:0] < s_q.n) check = 4'(systole_pkg::ErrBadLeadingDim);
      Reserved1Word: if (d != '0) check = 4'(systole_pkg::ErrBadFlags);
      AWord, BWord: if (d[0]) check = 4'(systole_pkg::ErrMisalignedAddress);
      CWord: if (out_bf16 ? d[0] : d[1:0] != '0) check = 4'(systole_pkg::ErrMisalignedAddress);
      BiasWord: if (has_bias && d[1:0] != '0) check = 4'(systole_pkg::ErrMisalignedAddress);
      default: ;  // the high words and the ranges: Range
    endcase
  end

  // The end of the operand at hand: address + ((rows - 1) ld + cols) x size.
  logic [AccBits-1:0] span_cols, span_addr;
  logic [AddrBits-1:0] span_ld;
  logic [RowBits:0]   span_rows;  // rows - 1
  logic [1:0]         span_shift;
  logic               op_big;     // an address or ld reaching past the memory
  always_comb begin
    unique case (s_q.op)
      OpA: begin
        span_rows  = (RowBits+1)'(s_q.m) - 1'b1;
        span_ld    = s_q.lda;
        span_cols  = AccBits'(s_q.k);
        span_addr  = AccBits'(s_q.a);
        span_shift = 2'd1;
        op_big     = s_q.a_big || (s_q.m > MBits'(1) && s_q.lda_big);
      end
      OpB: begin
        span_rows  = (RowBits+1)'(s_q.k) - 1'b1;
        span_ld    = s_q.ldb;
        span_cols  = AccBits'(s_q.n);
        span_addr  = AccBits'(s_q.b);
        span_shift = 2'd1;
        op_big     = s_q.b_big || (s_q.k > KBits'(1) && s_q.ldb_big);
      end
      OpC: begin
        span_rows  = (RowBits+1)'(s_q.m) - 1'b1;
        span_ld    = s_q.ldc;
        span_cols  = AccBits'(s_q.n);
        span_addr  = AccBits'(s_q.c);
        span_shift = out_bf16 ? 2'd1 : 2'd2;
        op_big     = s_q.c_big || (s_q.m > MBits'(1) && s_q.ldc_big);
      end
      default: begin
        span_rows  = '0;
        span_ld    = '0;
        span_cols  = AccBits'(s_q.n);
        span_addr  = AccBits'(s_q.bias);
        span_shift = 2'd2;
        op_big     = s_q.bias_big;
      end
    endcase
    span_end = span_addr + ((AccBits'(span_rows) * AccBits'(span_ld) + span_cols) << span_shift);
  end

  logic big;  // the word, as an address or ld, reaches past the memory
  assign big = d[31:AddrBits] != '0;

  always_comb begin
    s_d          = s_q;
    weight_shift = 1'b0;
    act_valid    = 1'b0;
    act_final    = s_q.k0 + KBits'(Rows) >= s_q.k;
    act_last     = act_final && last_row;
    init_valid   = 1'b0;
    if (mem_valid_o && mem_ready_i && !mem_write_o) s_d.issued = 1'b1;
    if (got) s_d.issued = 1'b0;

    unique case (s_q.state)
      Idle: if (start) begin
        s_d       = '0;
        s_d.state = Header;
        s_d.ptr   = cmd;
      end

      Header: if (got) begin
        s_d.ptr  = ptr_next;
        s_d.word = s_q.word + 1'b1;
        unique case (s_q.word)
          MagicWord: if (d != systole_pkg::CommandListMagic) s_d.error = 4'(systole_pkg::ErrBadMagic);
          VersionWord:
            if (d[VersionAt +: 16] != 16'(systole_pkg::VersionMajor))
              s_d.error = 4'(systole_pkg::ErrBadVersion);
          CountWord: begin
            s_d.count = DescBits'(d);
            if (d == '0 || d[31:DescBits] != '0 || (d[DescBits-1] && d[DescBits-2:0] != '0))
              s_d.error = 4'(systole_pkg::ErrBadCount);
          end
          default: if (d != '0) s_d.error = 4'(systole_pkg::ErrBadFlags);
        endcase
        if (s_d.error != '0) s_d.state = Finish;
        else if (s_q.word == LastWord) s_d.state = Desc;
      end

      Desc: if (got) begin
        s_d.ptr  = ptr_next;
        s_d.word = s_q.word + 1'b1;
        // The codes are numbered in check order: the smallest is the first.
        if (!s_q.exec && check != '0 && (s_q.error == '0 || check < s_q.error)) s_d.error = check;
        unique case (s_q.word)
          OpcodeWord: s_d.flags = d[FlagsAt +: FlagBits];
          MWord:   s_d.m = MBits'(d);
          NWord:   s_d.n = NBits'(d);
          KWord:   s_d.k = KBits'(d);
          LdaWord: begin s_d.lda = AddrBits'(d); s_d.lda_big = big; end
          LdbWord: begin s_d.ldb = AddrBits'(d); s_d.ldb_big = big; end
          LdcWord: begin s_d.ldc = AddrBits'(d); s_d.ldc_big = big; end
          AWord:   begin s_d.a = AddrBits'(d); s_d.a_big = big; end
          BWord:   begin s_d.b = AddrBits'(d); s_d.b_big = big; end
          CWord:   begin s_d.c = AddrBits'(d); s_d.c_big = big; end
          BiasWord: begin s_d.bias = AddrBits'(d); s_d.bias_big = big; end
          AWord + 4'd1:    s_d.a_big = s_q.a_big || d != '0;
          BWord + 4'd1:    s_d.b_big = s_q.b_big || d != '0;
          CWord + 4'd1:    s_d.c_big = s_q.c_big || d != '0;
          BiasWord + 4'd1: s_d.bias_big = s_q.bias_big || d != '0;
          default: ;
        endcase
        if (s_q.word == LastWord) begin
          s_d.next_desc = ptr_next;
          if (s_q.exec) begin
            s_d.n0     = '0;
            s_d.c_tile = s_q.c;
            s_d.state  = Tile;
          end else if (s_d.error != '0) begin
            s_d.state = Finish;
          end else begin
            s_d.op    = OpA;
            s_d.state = Range;
          end
        end
      end

      Range: begin
        s_d.op    = s_q.op + 1'b1;
        if (op_big || span_end > AccBits'(mem_bytes)) begin
          s_d.error = 4'(systole_pkg::ErrAddressOutOfRange);
          s_d.state = Finish;
        end else if (s_q.op == OpBias || (s_q.op == OpC && !has_bias)) begin
          // This descriptor is valid: the next, or run the list.
          s_d.word  = '0;
          s_d.state = Desc;
          s_d.desc  = s_q.desc + 1'b1;
          if (s_q.desc + 1'b1 == s_q.count) begin
            s_d.exec = 1'b1;
            s_d.desc = '0;
            s_d.ptr  = cmd + AddrBits'(64);
          end
        end
      end

      Tile: begin
        s_d.r_at   = '0;
        s_d.c_at   = '0;
        s_d.row    = '0;
        s_d.k0     = '0;
        s_d.a_tile = s_q.a;
        s_d.line   = s_q.c_tile;
        s_d.b_line = s_q.b + AddrBits'({s_q.n0, 1'b0});
        s_d.lanes  = '0;
        s_d.ptr    = has_bias ? s_q.bias + AddrBits'({s_q.n0, 2'b00}) : s_q.c_tile;
        s_d.state  = has_bias ? Bias : accumulate ? InitRead : Init;
      end

      // The N tile's bias, Cols fp32 elements (+0 beyond N), shifted in
      // from the top.
      Bias: if (got || !in_tile) begin
        s_d.bias_lanes = (s_q.bias_lanes >> 32) | ((Cols*32)'(in_tile ? d : 32'h0) << (32 * (Cols - 1)));
        s_d.ptr  = ptr_next;
        s_d.c_at = s_q.c_at + 1'b1;
        if (last_c) begin
          s_d.c_at  = '0;
          s_d.ptr   = s_q.c_tile;
          s_d.state = accumulate ? InitRead : Init;
        end
      end

      // A row's starting values: its C elements, in their precision.
      InitRead: if (got || !in_tile) begin
        s_d.lanes = (s_q.lanes >> 32) |
                    ((Cols*32)'(!in_tile ? 32'h0 : out_bf16 ? {half, 16'h0000} : d) << (32 * (Cols - 1)));
        s_d.ptr  = ptr_next;
        s_d.c_at = s_q.c_at + 1'b1;
        if (last_c) s_d.state = Init;
      end

      Init: begin
        init_valid = 1'b1;
        s_d.c_at   = '0;
        s_d.row    = row_next;
        s_d.line   = line_next;
        s_d.ptr    = line_next;
        if (last_row) begin
          s_d.row   = '0;
          s_d.ptr   = s_q.b_line;
          s_d.line  = s_q.b_line;
          s_d.state = Weights;
        end else if (accumulate) begin
          s_d.state = InitRead;
        end
      end

      // The K tile's weights, B's rows k0.. and columns n0.. in order (+0
      // beyond K or N), shifted in from the top: the first lands lowest.
      Weights: if (got || !in_tile) begin
        s_d.weights = (s_q.weights >> 16) | ((Rows*Cols*16)'(elem16) << (16 * (Rows * Cols - 1)));
        s_d.ptr  = ptr_next;
        s_d.c_at = s_q.c_at + 1'b1;
        if (last_c) begin  // the next row of B
          s_d.c_at = '0;
          s_d.r_at = s_q.r_at + 1'b1;
          s_d.line = line_next;
          s_d.ptr  = line_next;
          if (last_r) begin
            s_d.r_at   = '0;
            s_d.b_line = line_next;  // B[k0 + Rows][n0]
            s_d.state  = Shift;
          end
        end
      end

      Shift: begin
        weight_shift = 1'b1;
        s_d.weights  = s_q.weights << (16 * Cols);
        s_d.r_at     = s_q.r_at + 1'b1;
        if (last_r) begin
          s_d.r_at  = '0;
          s_d.row   = '0;
          s_d.ptr   = s_q.a_tile;
          s_d.line  = s_q.a_tile;
          s_d.state = Act;
        end
      end

      // A row's activation vector: Rows elements of its K tile (+0 beyond
      // K), shifted in from the top.
      Act: if (got || !in_tile) begin
        s_d.act  = (s_q.act >> 16) | ((Rows*16)'(elem16) << (16 * (Rows - 1)));
        s_d.ptr  = ptr_next;
        s_d.r_at = s_q.r_at + 1'b1;
        if (last_r) begin
          s_d.r_at  = '0;
          s_d.state = Stream;
        end
      end

      Stream: begin
        act_valid = 1'b1;
        s_d.row   = row_next;
        s_d.line  = line_next;
        s_d.ptr   = line_next;
        s_d.state = Act;
        if (last_row) begin
          s_d.drain = '0;
          s_d.state = Drain;
        end
      end

      // The array empties (the sums are in the accumulators a cycle after
      // they leave it) before its weights change or its rows are read.
      Drain: begin
        s_d.drain = s_q.drain + 1'b1;
        if (s_q.drain == DrainBits'(Latency + 1)) begin
          s_d.row = '0;
          if (act_final) begin
            s_d.line  = s_q.c_tile;
            s_d.state = Readout;
          end else begin
            s_d.k0     = s_q.k0 + KBits'(Rows);
            s_d.a_tile = s_q.a_tile + AddrBits'(2 * Rows);
            s_d.ptr    = s_q.b_line;
            s_d.line   = s_q.b_line;
            s_d.state  = Weights;
          end
        end
      end

      Readout: s_d.state = Capture;  // the row's word comes next cycle

      Capture: begin
        s_d.lanes = word;
        s_d.c_at  = '0;
        s_d.ptr   = s_q.line;
        s_d.state = Store;
      end

      // The row's elements to C (those inside N), from the bottom lane up.
      Store: if (access_done || !in_tile) begin
        s_d.lanes = s_q.lanes >> 32;
        s_d.ptr   = ptr_next;
        s_d.c_at  = s_q.c_at + 1'b1;
        if (last_c) begin
          s_d.c_at  = '0;
          s_d.row   = row_next;
          s_d.line  = line_next;
          s_d.state = Readout;
          if (last_row) begin
            // The N tile is done: the next, or the next descriptor.
            s_d.n0     = s_q.n0 + NBits'(Cols);
            s_d.c_tile = s_q.c_tile + (out_bf16 ? AddrBits'(2 * Cols) : AddrBits'(4 * Cols));
            if (s_q.n0 + NBits'(Cols) < s_q.n) begin
              s_d.state = Tile;
            end else begin
              s_d.desc  = s_q.desc + 1'b1;
              s_d.word  = '0;
              s_d.ptr   = s_q.next_desc;
              s_d.state = s_q.desc + 1'b1 == s_q.count ? Finish : Desc;
            end
          end
        end
      end

      Finish: s_d.state = Idle;

      default: s_d.state = Idle;
    endcase
  end

  // The launch's results and counters.
  logic [ElemBits-1:0] macs_step;
  assign macs_step = ElemBits'(k_eff * n_eff);
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      s_q            <= '0;  // Idle
      status_q       <= '0;
      header_error_q <= 1'b0;
      error_index_q  <= '0;
      done_count_q   <= '0;
      busy_q         <= '0;
      macs_q         <= '0;
      read_bytes_q   <= '0;
      write_bytes_q  <= '0;
      stall_q        <= '0;
    end else begin
      s_q <= s_d;
      if (s_q.state == Idle && start) begin
        status_q       <= '0;
        header_error_q <= 1'b0;
        error_index_q  <= '0;
        done_count_q   <= '0;
        busy_q         <= '0;
        macs_q         <= '0;
        read_bytes_q   <= '0;
        write_bytes_q  <= '0;
        stall_q        <= '0;
      end
      if (busy) busy_q <= busy_q + 1'b1;
      if (act_valid) macs_q <= macs_q + CounterBits'(macs_step);
      if (got) read_bytes_q <= read_bytes_q + CounterBits'(4);
      if (s_q.state == Store && access_done) write_bytes_q <= write_bytes_q + CounterBits'(elem_bytes);
      if (s_q.state == Weights || s_q.state == Act) stall_q <= stall_q + 1'b1;
      if (s_q.exec && s_d.desc != s_q.desc) done_count_q <= done_count_q + 1'b1;
      if (s_q.state != Finish && s_d.state == Finish) begin
        status_q       <= s_d.error;
        header_error_q <= s_q.state == Header;
        error_index_q  <= s_d.error != '0 ? s_q.desc : '0;
      end
    end
  end

  // One access at a time: no request while a read is outstanding.
  `ASSERT(a_one_access, s_q.issued |-> !mem_valid_o)
  `ASSERT(a_no_write_beyond, mem_valid_o && mem_write_o |-> s_q.ptr < mem_bytes)
endmodule
