// SPDX-License-Identifier: Apache-2.0
// The kernel's front end: on start, fetch the command list's header and
// check it, fetch and check every descriptor (nothing runs unless all are
// valid), then per descriptor fetch it again, decode it and let the
// engines run it: the GEMM engines, or the vector engine. Any
// SLVERR/DECERR ends the launch with ErrAxiError at the descriptor it
// happened in (or at the header), after every request of that descriptor
// has completed.
`include "systole_assert.svh"

module systole_front #(
  parameter int unsigned Rows = 4,
  parameter int unsigned Cols = 4,
  parameter bit          VectorEngine = 1'b1  // takes vector descriptors
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  // Arguments.
  input  logic                    start_i,
  input  systole_pkg::axi_addr_t  command_addr_i,
  input  logic [63:0]             mem_bytes_i,
  // The command port: one beat (the header, or a descriptor) at a time.
  output logic                    cmd_req_valid_o,
  input  logic                    cmd_req_ready_i,
  output systole_pkg::axi_addr_t  cmd_addr_o,
  input  logic                    cmd_row_valid_i,
  input  systole_pkg::axi_data_t  cmd_row_i,
  output logic                    cmd_row_ready_o,
  // The engines: the descriptor, its start and its compute phase.
  output systole_ctrl_pkg::desc_t desc_o,
  output logic                    clear_o,
  output logic                    run_o,
  input  logic                    engines_done_i,  // every N tile written, every port quiet
  input  logic                    axi_error_i,     // a port saw SLVERR/DECERR
  // Progress and results.
  output logic                    launch_o,        // start taken
  output logic                    busy_o,
  output logic                    finished_o,      // a descriptor completed
  output logic                    done_o,          // one cycle: the launch ended
  output logic [31:0]             status_o,        // systole_pkg::error_code_e
  output logic [31:0]             error_index_o
);
  typedef enum logic [3:0] {
    Idle, FetchHeader, CheckHeader, FetchCheck, Check, FetchRun, Decode, Compute, Finish
  } state_e;

  typedef struct packed {
    state_e                    state;
    logic                      cmd_asked;    // the beat being fetched was asked for
    logic [31:0]               count;        // descriptors in the list
    logic [31:0]               index;        // the current one
    logic [31:0]               status;       // systole_pkg::error_code_e
    logic [31:0]               error_index;
    logic                      done;
  } state_t;
  state_t                  s_d, s_q;
  systole_pkg::axi_data_t  fetched_d, fetched_q;  // the header or descriptor just read
  systole_ctrl_pkg::desc_t desc_d, desc_q, decoded;
  logic [31:0]             header_error, descriptor_error;
  logic                    fetching;

  systole_validate #(.Rows(Rows), .VectorEngine(VectorEngine)) u_validate (
    .beat_i(fetched_q), .mem_bytes_i,
    .header_error_o(header_error), .descriptor_error_o(descriptor_error)
  );

  assign fetching = s_q.state == FetchHeader || s_q.state == FetchCheck || s_q.state == FetchRun;

  assign cmd_req_valid_o = fetching && !s_q.cmd_asked;
  assign cmd_addr_o      = s_q.state == FetchHeader
      ? command_addr_i
      : command_addr_i + 64'(systole_pkg::BeatBytes) * (64'(s_q.index) + 64'd1);
  assign cmd_row_ready_o = fetching;


  assign desc_o        = desc_q;
  assign clear_o       = s_q.state == Decode;
  assign run_o         = s_q.state == Compute;
  assign launch_o      = s_q.state == Idle && start_i;
  assign busy_o        = s_q.state != Idle;
  assign finished_o    = run_o && engines_done_i && !axi_error_i;
  assign done_o        = s_q.done;
  assign status_o      = s_q.status;
  assign error_index_o = s_q.error_index;

  // The descriptor's fields, by the spec's names (the opcode and the
  // reserved bytes are systole_validate's).
  logic [7:0]  flags;
  logic [31:0] field_n, field_k;
  assign flags   = fetched_q[8*systole_pkg::DescFlagsByte +: 8];
  assign field_n = fetched_q[8*systole_pkg::DescNByte +: 32];
  assign field_k = fetched_q[8*systole_pkg::DescKByte +: 32];
  // A vector descriptor's fields.
  systole_ctrl_pkg::vec_t vec;
  logic [7:0]  opcode;
  logic        is_vector, rows_op;
  logic [31:0] beta;
  assign opcode  = fetched_q[8*systole_pkg::DescOpcodeByte +: 8];
  assign is_vector = systole_ctrl_pkg::is_vector_opcode(opcode);
  assign rows_op = systole_ctrl_pkg::vector_reads_rows(opcode[3:0]);
  assign beta    = systole_arith::fp32_canonical(fetched_q[8*systole_pkg::VecBetaByte +: 32]);
  always_comb begin
    vec.opcode     = opcode;
    vec.nesterov   = systole_ctrl_pkg::has_flag(flags, 8'(systole_pkg::VectorFlagNesterov));
    vec.transpose  = systole_ctrl_pkg::has_flag(flags, 8'(systole_pkg::VectorFlagTranspose));
    vec.n          = fetched_q[8*systole_pkg::VecNByte +: 32];
    vec.rows       = rows_op ? fetched_q[8*systole_pkg::VecRowsByte +: 32] : 32'd1;
    vec.stride     = fetched_q[8*systole_pkg::VecStrideByte +: 32];
    vec.alpha      = systole_arith::fp32_canonical(fetched_q[8*systole_pkg::VecAlphaByte +: 32]);
    vec.beta       = beta;
    vec.gamma      = systole_arith::fp32_canonical(fetched_q[8*systole_pkg::VecGammaByte +: 32]);
    vec.delta      = systole_arith::fp32_canonical(fetched_q[8*systole_pkg::VecDeltaByte +: 32]);
    vec.x          = fetched_q[8*systole_pkg::VecXAddrByte +: 64];
    vec.y          = fetched_q[8*systole_pkg::VecYAddrByte +: 64];
    vec.z          = fetched_q[8*systole_pkg::VecZAddrByte +: 64];
    vec.w          = fetched_q[8*systole_pkg::VecWAddrByte +: 64];
    // axpby with beta +0 does not read y.
    vec.reads      = systole_ctrl_pkg::vector_reads(opcode[3:0]) &
        ~(opcode == 8'(systole_pkg::OpcodeAxpby) && beta == '0 ? 4'b0010 : 4'b0000);
    vec.writes     = systole_ctrl_pkg::vector_writes(opcode[3:0]);
  end
  always_comb begin
    decoded.is_vector  = is_vector;
    decoded.vec        = vec;
    decoded.accumulate = systole_ctrl_pkg::has_flag(flags, 8'(systole_pkg::FlagAccumulate));
    decoded.bias       = systole_ctrl_pkg::has_flag(flags, 8'(systole_pkg::FlagBias));
    decoded.relu       = systole_ctrl_pkg::has_flag(flags, 8'(systole_pkg::FlagRelu));
    decoded.out_bf16   = systole_ctrl_pkg::has_flag(flags, 8'(systole_pkg::FlagOutputBf16));
    decoded.m          = fetched_q[8*systole_pkg::DescMByte +: 32];
    decoded.n          = field_n;
    decoded.k          = field_k;
    decoded.lda        = fetched_q[8*systole_pkg::DescLdaByte +: 32];
    decoded.ldb        = fetched_q[8*systole_pkg::DescLdbByte +: 32];
    decoded.ldc        = fetched_q[8*systole_pkg::DescLdcByte +: 32];
    decoded.a          = fetched_q[8*systole_pkg::DescAAddrByte +: 64];
    decoded.b          = fetched_q[8*systole_pkg::DescBAddrByte +: 64];
    decoded.c          = fetched_q[8*systole_pkg::DescCAddrByte +: 64];
    decoded.bias_addr  = fetched_q[8*systole_pkg::DescBiasAddrByte +: 64];
    decoded.n_tiles    = (field_n + Cols - 1) / Cols;
    decoded.k_tiles    = (field_k + Rows - 1) / Rows;
    if (is_vector) begin  // nothing for the GEMM engines
      decoded.m       = '0;
      decoded.n       = '0;
      decoded.k       = '0;
      decoded.n_tiles = '0;
      decoded.k_tiles = '0;
    end
  end


  always_comb begin
    s_d       = s_q;
    fetched_d = fetched_q;
    desc_d    = desc_q;
    s_d.done  = 1'b0;
    if (cmd_req_valid_o && cmd_req_ready_i) s_d.cmd_asked = 1'b1;
    if (fetching && cmd_row_valid_i) begin
      s_d.cmd_asked = 1'b0;
      fetched_d     = cmd_row_i;
    end
    unique case (s_q.state)
      Idle: if (start_i) s_d.state = FetchHeader;
      FetchHeader, FetchCheck, FetchRun: if (cmd_row_valid_i) begin
        if (axi_error_i) begin
          s_d.status      = systole_pkg::ErrAxiError;
          s_d.error_index = s_q.state == FetchHeader ? systole_pkg::HeaderErrorIndex : s_q.index;
          s_d.state       = Finish;
        end else begin
          s_d.state = s_q.state == FetchHeader ? CheckHeader : s_q.state == FetchCheck ? Check : Decode;
        end
      end
      CheckHeader:
        if (header_error != systole_pkg::ErrOk) begin
          s_d.status      = header_error;
          s_d.error_index = systole_pkg::HeaderErrorIndex;
          s_d.state       = Finish;
        end else begin
          s_d.count = fetched_q[8*systole_pkg::HdrCountByte +: 32];
          s_d.index = '0;
          s_d.state = FetchCheck;
        end
      Check:
        if (descriptor_error != systole_pkg::ErrOk) begin
          s_d.status      = descriptor_error;
          s_d.error_index = s_q.index;
          s_d.state       = Finish;
        end else if (s_q.index + 32'd1 == s_q.count) begin
          s_d.index = '0;
          s_d.state = FetchRun;
        end else begin
          s_d.index = s_q.index + 32'd1;
          s_d.state = FetchCheck;
        end
      // The engines start over (clear_o).
      Decode: begin
        desc_d    = decoded;
        s_d.state = Compute;
      end
      Compute:
        if (engines_done_i) begin
          if (axi_error_i) begin
            s_d.status      = systole_pkg::ErrAxiError;
            s_d.error_index = s_q.index;
            s_d.state       = Finish;
          end else if (s_q.index + 32'd1 == s_q.count) begin
            s_d.status      = systole_pkg::ErrOk;
            s_d.error_index = '0;
            s_d.state       = Finish;
          end else begin
            s_d.index = s_q.index + 32'd1;
            s_d.state = FetchRun;
          end
        end
      Finish: begin
        s_d.done  = 1'b1;
        s_d.state = Idle;
      end
      default: s_d.state = Idle;
    endcase
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) s_q <= '0;  // Idle, ErrOk
    else s_q <= s_d;
  end
  // The fetched beat and the decoded descriptor are data: the state says
  // when they are valid.
  always_ff @(posedge clk_i) begin
    fetched_q <= fetched_d;
    desc_q    <= desc_d;
  end

  // The command port is asked for one beat at a time.
  `ASSERT(a_one_fetch, cmd_row_valid_i |-> fetching && s_q.cmd_asked)
endmodule
