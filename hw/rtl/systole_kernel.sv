// SPDX-License-Identifier: Apache-2.0
// The Systole kernel: an AXI4-Lite register port, AXI4 master ports (cmd;
// the a group and the b group, read; the c group, read and write; a group
// is a striped port, systole_striped_reader/_writer) and the controller
// around the compute core. It computes what hw/hls/systole_kernel.h
// computes, bit for bit. The controller is a front end and five engines
// that overlap:
//   - systole_front:         fetches and checks the command list and
//                            decodes each descriptor (port cmd);
//   - systole_load_engine:   loads A into the activation buffer K tile by
//                            K tile while the first N tile computes (a);
//   - systole_init_engine:   fills an accumulator bank with C (when
//                            accumulating) or +0 and reads the N tile's
//                            bias (c, read);
//   - systole_weight_engine: requests each K tile's weight rows (b) and
//                            shifts them into the array's idle weight bank
//                            while the other bank computes;
//   - systole_stream_engine: feeds the array one activation row per cycle,
//                            K tile after K tile, N tile after N tile;
//   - systole_write_engine:  reads finished rows through the output stage
//                            and writes C (c, write);
//   - systole_vector_engine: runs a vector descriptor instead (c, read and
//                            write).
// The core's two accumulator banks let init and write work on one N tile
// while the array accumulates another. This module only connects them.
// A group's ports sit side by side in one vector, port p of the group at
// [p * AxiReqBits +: AxiReqBits] (systole_rtl names them one by one).
`include "systole_assert.svh"

module systole_kernel #(
  parameter int unsigned Rows = 4,
  parameter int unsigned Cols = 4,
  localparam int unsigned ReqBits = systole_pkg::AxiReqBits,
  localparam int unsigned RspBits = systole_pkg::AxiRspBits,
  localparam int unsigned APorts = systole_pkg::APorts,
  localparam int unsigned BPorts = systole_pkg::BPorts,
  localparam int unsigned CPorts = systole_pkg::CPorts
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  systole_pkg::axil_req_t     ctrl_req_i,
  output systole_pkg::axil_rsp_t     ctrl_rsp_o,
  output logic                       interrupt_o,
  output systole_pkg::axi_req_t      cmd_req_o,
  input  systole_pkg::axi_rsp_t      cmd_rsp_i,
  output logic [APorts*ReqBits-1:0]  a_req_o,
  input  logic [APorts*RspBits-1:0]  a_rsp_i,
  output logic [BPorts*ReqBits-1:0]  b_req_o,
  input  logic [BPorts*RspBits-1:0]  b_rsp_i,
  output logic [CPorts*ReqBits-1:0]  c_req_o,
  input  logic [CPorts*RspBits-1:0]  c_rsp_i
);
  localparam int unsigned MaxM = systole_pkg::MaxM;
  localparam int unsigned RowBits = $clog2(MaxM);
  localparam int unsigned BeatBytes = systole_pkg::BeatBytes;
  localparam int unsigned CRowBeats = (4 * Cols + BeatBytes - 1) / BeatBytes;

  // ---------------------------------------------------------------- registers
  logic                   start, done, finished, launch, busy, stall, error_seen;
  logic [systole_pkg::MemoryPorts*64-1:0] port_base;
  logic [63:0]            mem_bytes, busy_cycles, macs, read_bytes, write_bytes, stall_cycles;
  logic [31:0]            status, error_index, descriptors_done;

  systole_axil_regs #(.Rows(Rows), .Cols(Cols), .Features(systole_pkg::FeatureVectorEngine)) u_regs (
    .clk_i, .rst_ni, .axil_req_i(ctrl_req_i), .axil_rsp_o(ctrl_rsp_o), .interrupt_o,
    .start_o(start), .port_base_o(port_base), .mem_bytes_o(mem_bytes),
    .done_i(done), .status_i(status), .error_index_i(error_index),
    .descriptors_done_i(descriptors_done), .busy_cycles_i(busy_cycles), .macs_i(macs),
    .dma_read_bytes_i(read_bytes), .dma_write_bytes_i(write_bytes), .stall_cycles_i(stall_cycles)
  );
  // Each group's bases, port p of the group at [64 p +: 64].
  logic [APorts*64-1:0] a_base;
  logic [BPorts*64-1:0] b_base;
  logic [CPorts*64-1:0] c_base;
  assign a_base = port_base[64*systole_pkg::FirstAPort +: APorts*64];
  assign b_base = port_base[64*systole_pkg::FirstBPort +: BPorts*64];
  assign c_base = port_base[64*systole_pkg::FirstCPort +: CPorts*64];

  // ---------------------------------------------------------------- ports
  // Each port group delivers rows in request order; the c group also
  // writes rows.
  logic                   cmd_req_valid, cmd_req_ready, cmd_row_valid, cmd_row_ready, cmd_idle, cmd_error;
  logic                   a_req_valid, a_req_ready, a_row_valid, a_row_ready, a_idle, a_error;
  logic                   b_req_valid, b_req_ready, b_row_valid, b_row_ready, b_idle, b_error;
  logic                   c_req_valid, c_req_ready, c_row_valid, c_row_ready, c_idle, c_error;
  systole_pkg::axi_addr_t cmd_addr, a_addr, b_addr, c_addr;
  logic [31:0]            a_bytes, b_bytes, c_bytes;
  systole_pkg::axi_data_t cmd_row;
  logic [Rows*16-1:0]     a_row;
  logic [Cols*16-1:0]     b_row;
  logic [Cols*32-1:0]     c_row;
  logic                   wr_req_valid, wr_req_ready, wr_idle, wr_error;
  systole_pkg::axi_addr_t wr_addr;
  logic [31:0]            wr_bytes;
  logic [CRowBeats*systole_pkg::AxiDataBits-1:0] wr_row;
  logic [CPorts*ReqBits-1:0] c_read_req, c_write_req;
  logic [APorts-1:0]      a_read_beat;  // beats moved, per port (the counters)
  logic [BPorts-1:0]      b_read_beat;
  logic [CPorts-1:0]      c_read_beat, c_write_beat;

  systole_row_reader #(.RowBytes(BeatBytes)) u_cmd_reader (
    .clk_i, .rst_ni, .req_valid_i(cmd_req_valid), .req_ready_o(cmd_req_ready), .req_addr_i(cmd_addr),
    .req_bytes_i(32'(BeatBytes)), .row_valid_o(cmd_row_valid), .row_ready_i(cmd_row_ready), .row_o(cmd_row),
    .idle_o(cmd_idle), .error_o(cmd_error), .clear_error_i(launch),
    .axi_req_o(cmd_req_o), .axi_rsp_i(cmd_rsp_i)
  );
  systole_striped_reader #(.Ports(APorts), .RowBytes(2 * Rows)) u_a_reader (
    .clk_i, .rst_ni, .base_i(a_base), .req_valid_i(a_req_valid), .req_ready_o(a_req_ready),
    .req_addr_i(a_addr), .req_bytes_i(a_bytes), .row_valid_o(a_row_valid), .row_ready_i(a_row_ready),
    .row_o(a_row), .idle_o(a_idle), .error_o(a_error), .clear_error_i(launch), .beat_o(a_read_beat),
    .axi_req_o(a_req_o), .axi_rsp_i(a_rsp_i)
  );
  systole_striped_reader #(.Ports(BPorts), .RowBytes(2 * Cols)) u_b_reader (
    .clk_i, .rst_ni, .base_i(b_base), .req_valid_i(b_req_valid), .req_ready_o(b_req_ready),
    .req_addr_i(b_addr), .req_bytes_i(b_bytes), .row_valid_o(b_row_valid), .row_ready_i(b_row_ready),
    .row_o(b_row), .idle_o(b_idle), .error_o(b_error), .clear_error_i(launch), .beat_o(b_read_beat),
    .axi_req_o(b_req_o), .axi_rsp_i(b_rsp_i)
  );
  systole_striped_reader #(.Ports(CPorts), .RowBytes(4 * Cols)) u_c_reader (
    .clk_i, .rst_ni, .base_i(c_base), .req_valid_i(c_req_valid), .req_ready_o(c_req_ready),
    .req_addr_i(c_addr), .req_bytes_i(c_bytes), .row_valid_o(c_row_valid), .row_ready_i(c_row_ready),
    .row_o(c_row), .idle_o(c_idle), .error_o(c_error), .clear_error_i(launch), .beat_o(c_read_beat),
    .axi_req_o(c_read_req), .axi_rsp_i(c_rsp_i)
  );
  systole_striped_writer #(.Ports(CPorts), .RowBytes(4 * Cols)) u_c_writer (
    .clk_i, .rst_ni, .base_i(c_base), .req_valid_i(wr_req_valid), .req_ready_o(wr_req_ready),
    .req_addr_i(wr_addr), .req_bytes_i(wr_bytes), .req_row_i(wr_row),
    .idle_o(wr_idle), .error_o(wr_error), .clear_error_i(launch), .beat_o(c_write_beat),
    .axi_req_o(c_write_req), .axi_rsp_i(c_rsp_i)
  );
  // The c ports: the init engine's reads and the write engine's writes, or
  // the vector engine's.
  for (genvar p = 0; p < CPorts; p++) begin : g_c_port
    systole_axi_join u_join (
      .read_req_i(c_read_req[p*ReqBits +: ReqBits]), .write_req_i(c_write_req[p*ReqBits +: ReqBits]),
      .req_o(c_req_o[p*ReqBits +: ReqBits])
    );
  end
  assign error_seen = cmd_error || a_error || b_error || c_error || wr_error;

  // ---------------------------------------------------------------- front
  systole_ctrl_pkg::desc_t desc;
  logic                    clear, run, gemm_run, vector_run, vector_done, engines_done;
  logic [31:0]             written;

  // A descriptor runs on the GEMM engines or on the vector engine.
  assign gemm_run     = run && !desc.is_vector;
  assign vector_run   = run && desc.is_vector;
  assign engines_done = (desc.is_vector ? vector_done : written == desc.n_tiles) &&
                        wr_idle && cmd_idle && a_idle && b_idle && c_idle;

  systole_front #(.Rows(Rows), .Cols(Cols)) u_front (
    .clk_i, .rst_ni,
    .start_i(start), .command_addr_i(port_base[63:0]), .mem_bytes_i(mem_bytes),
    .cmd_req_valid_o(cmd_req_valid), .cmd_req_ready_i(cmd_req_ready), .cmd_addr_o(cmd_addr),
    .cmd_row_valid_i(cmd_row_valid), .cmd_row_i(cmd_row), .cmd_row_ready_o(cmd_row_ready),
    .desc_o(desc), .clear_o(clear), .run_o(run), .engines_done_i(engines_done), .axi_error_i(error_seen),
    .launch_o(launch), .busy_o(busy), .finished_o(finished), .done_o(done), .status_o(status),
    .error_index_o(error_index)
  );

  systole_counters #(.ReadPorts(1 + APorts + BPorts + CPorts), .WritePorts(CPorts)) u_counters (
    .clk_i, .rst_ni, .launch_i(launch), .busy_i(busy),
    .read_beat_i({cmd_rsp_i.r_valid && cmd_req_o.r_ready, a_read_beat, b_read_beat, c_read_beat}),
    .write_beat_i(c_write_beat), .stall_i(stall),
    .finished_i(finished), .macs_i(64'(desc.m) * 64'(desc.n) * 64'(desc.k)),  // 0 for a vector descriptor
    .busy_cycles_o(busy_cycles), .macs_o(macs), .read_bytes_o(read_bytes), .write_bytes_o(write_bytes),
    .stall_cycles_o(stall_cycles), .descriptors_o(descriptors_done)
  );

  // ---------------------------------------------------------------- engines
  logic               weight_shift, weight_bank, act_valid, act_bank, act_acc_bank, act_final, act_last;
  logic               init_valid, init_bank, read_bank, row_done, tile_done, buf_write;
  logic               init_req_valid, init_row_ready, out_req_valid;
  systole_pkg::axi_addr_t init_addr, out_addr;
  logic [31:0]        init_bytes, out_bytes;
  logic [CRowBeats*systole_pkg::AxiDataBits-1:0] out_row;
  logic [31:0]        loaded, streamed, inited, act_k_tile, a_loaded, buf_k_tile;
  logic [Cols*16-1:0] weight;
  logic [Rows*16-1:0] act, buf_data;
  logic [RowBits-1:0] act_row, init_row, read_row, buf_row;
  logic [Cols*32-1:0] init, bias, word;

  systole_load_engine #(.Rows(Rows), .MaxM(MaxM)) u_load (
    .clk_i, .rst_ni, .clear_i(clear), .run_i(gemm_run), .desc_i(desc),
    .req_valid_o(a_req_valid), .req_ready_i(a_req_ready), .req_addr_o(a_addr), .req_bytes_o(a_bytes),
    .row_valid_i(a_row_valid), .row_i(a_row), .row_ready_o(a_row_ready),
    .buf_write_o(buf_write), .buf_row_o(buf_row), .buf_k_tile_o(buf_k_tile), .buf_data_o(buf_data),
    .loaded_o(a_loaded)
  );

  systole_weight_engine #(.Rows(Rows), .Cols(Cols)) u_weight (
    .clk_i, .rst_ni, .clear_i(clear), .run_i(gemm_run), .desc_i(desc),
    .ask_o(b_req_valid), .ask_ready_i(b_req_ready), .addr_o(b_addr), .bytes_o(b_bytes),
    .row_valid_i(b_row_valid), .row_i(b_row), .take_o(b_row_ready),
    .shift_o(weight_shift), .bank_o(weight_bank), .weight_o(weight), .loaded_o(loaded),
    .act_valid_i(act_valid), .streamed_i(streamed)
  );

  systole_act_buffer #(.Rows(Rows), .MaxM(MaxM)) u_act_buffer (
    .clk_i, .write_i(buf_write), .write_row_i(buf_row), .write_k_tile_i(buf_k_tile), .write_data_i(buf_data),
    .read_row_i(act_row), .read_k_tile_i(act_k_tile), .read_data_o(act)
  );

  systole_stream_engine #(.MaxM(MaxM)) u_stream (
    .clk_i, .rst_ni, .clear_i(clear), .run_i(gemm_run), .desc_i(desc),
    .loaded_i(loaded), .inited_i(inited), .a_loaded_i(a_loaded),
    .valid_o(act_valid), .bank_o(act_bank), .acc_bank_o(act_acc_bank), .row_o(act_row),
    .k_tile_o(act_k_tile), .final_o(act_final), .last_o(act_last), .streamed_o(streamed), .stall_o(stall)
  );

  systole_init_engine #(.Cols(Cols), .MaxM(MaxM)) u_init (
    .clk_i, .rst_ni, .clear_i(clear), .run_i(gemm_run), .desc_i(desc),
    .written_i(written),
    .req_valid_o(init_req_valid), .req_ready_i(c_req_ready && !desc.is_vector), .req_addr_o(init_addr),
    .req_bytes_o(init_bytes), .row_valid_i(c_row_valid && !desc.is_vector), .row_i(c_row),
    .row_ready_o(init_row_ready),
    .init_valid_o(init_valid), .init_bank_o(init_bank), .init_row_o(init_row), .init_o(init),
    .bias_bank_i(read_bank), .bias_o(bias), .inited_o(inited)
  );

  systole_write_engine #(.Cols(Cols), .MaxM(MaxM)) u_write (
    .clk_i, .rst_ni, .clear_i(clear), .run_i(gemm_run), .desc_i(desc),
    .row_done_i(row_done), .tile_done_i(tile_done),
    .req_valid_o(out_req_valid), .req_ready_i(wr_req_ready && !desc.is_vector), .req_addr_o(out_addr),
    .req_bytes_o(out_bytes), .req_row_o(out_row),
    .read_bank_o(read_bank), .read_row_o(read_row), .word_i(word), .written_o(written)
  );

  // ---------------------------------------------------------------- vector engine
  logic                   vec_req_valid, vec_row_ready, vec_wr_valid;
  systole_pkg::axi_addr_t vec_addr, vec_wr_addr;
  logic [31:0]            vec_bytes, vec_wr_bytes;
  logic [CRowBeats*systole_pkg::AxiDataBits-1:0] vec_wr_row;

  systole_vector_engine #(.Cols(Cols)) u_vector (
    .clk_i, .rst_ni, .clear_i(clear), .run_i(vector_run), .desc_i(desc.vec),
    .req_valid_o(vec_req_valid), .req_ready_i(c_req_ready && desc.is_vector), .req_addr_o(vec_addr),
    .req_bytes_o(vec_bytes), .row_valid_i(c_row_valid && desc.is_vector), .row_i(c_row),
    .row_ready_o(vec_row_ready),
    .wr_valid_o(vec_wr_valid), .wr_ready_i(wr_req_ready && desc.is_vector), .wr_addr_o(vec_wr_addr),
    .wr_bytes_o(vec_wr_bytes), .wr_row_o(vec_wr_row), .done_o(vector_done)
  );

  // The c group's reader and writer serve whichever engines run.
  assign c_req_valid  = desc.is_vector ? vec_req_valid : init_req_valid;
  assign c_addr       = desc.is_vector ? vec_addr : init_addr;
  assign c_bytes      = desc.is_vector ? vec_bytes : init_bytes;
  assign c_row_ready  = desc.is_vector ? vec_row_ready : init_row_ready;
  assign wr_req_valid = desc.is_vector ? vec_wr_valid : out_req_valid;
  assign wr_addr      = desc.is_vector ? vec_wr_addr : out_addr;
  assign wr_bytes     = desc.is_vector ? vec_wr_bytes : out_bytes;
  assign wr_row       = desc.is_vector ? vec_wr_row : out_row;

  // ---------------------------------------------------------------- core
  systole_core #(.Rows(Rows), .Cols(Cols), .MaxM(MaxM)) u_core (
    .clk_i, .rst_ni,
    .weight_shift_i(weight_shift), .weight_bank_i(weight_bank), .weight_i(weight),
    .act_valid_i(act_valid), .act_bank_i(act_bank), .act_i(act),
    .act_acc_bank_i(act_acc_bank), .act_row_i(act_row), .act_final_i(act_final), .act_last_i(act_last),
    .row_done_o(row_done), .tile_done_o(tile_done),
    .init_valid_i(init_valid), .init_bank_i(init_bank), .init_row_i(init_row), .init_i(init),
    .read_bank_i(read_bank), .read_row_i(read_row),
    .bias_en_i(desc.bias), .relu_en_i(desc.relu), .bf16_en_i(desc.out_bf16), .bias_i(bias),
    .word_o(word)
  );

  // The bus widths the package states are the structs' (ports side by
  // side rely on them).
  `ASSERT_INIT(a_bus_widths,
      $bits(systole_pkg::axi_req_t) == ReqBits && $bits(systole_pkg::axi_rsp_t) == RspBits)
endmodule
