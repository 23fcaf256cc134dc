// SPDX-License-Identifier: Apache-2.0
// The Systole kernel: AXI4-Lite registers, four AXI4 master ports (cmd, a,
// b: read; c: read and write) and the controller around the compute core.
// It computes what hw/hls/systole_kernel.h computes, bit for bit:
//   fetch and check the header, check every descriptor (nothing runs unless
//   all are valid), then per descriptor load A's rows into the activation
//   buffer and compute its N tiles of Cols columns.
// The N tiles run as a pipeline of four engines that overlap:
//   - init:   fills an accumulator bank with C (when accumulating) or +0
//             and reads the tile's bias (port c, read);
//   - weight: requests each K tile's weight rows (port b, bottom row first)
//             and shifts them into the array's idle weight bank while the
//             other bank computes;
//   - stream: feeds the array one activation row per cycle, K tile after
//             K tile, N tile after N tile, without a gap when the operands
//             are ready;
//   - write:  reads the finished bank through the output stage and writes C
//             (port c, write).
// The core's two accumulator banks let init and write work on one N tile
// while the array accumulates another. Any SLVERR/DECERR response ends the
// launch with ErrAxiError at the descriptor it happened in (or at the
// header), after every request of that descriptor has completed: the DMAs
// deliver every beat even when it failed, so nothing can hang.
module systole_kernel #(
  parameter int unsigned Rows = 4,
  parameter int unsigned Cols = 4
) (
  input  logic clk_i,
  input  logic rst_ni,
  // AXI4-Lite control.
  input  logic        s_awvalid, output logic s_awready, input logic [11:0] s_awaddr,
  input  logic        s_wvalid,  output logic s_wready,  input logic [31:0] s_wdata,
  input  logic [3:0]  s_wstrb,
  output logic        s_bvalid,  input  logic s_bready,  output logic [1:0] s_bresp,
  input  logic        s_arvalid, output logic s_arready, input logic [11:0] s_araddr,
  output logic        s_rvalid,  input  logic s_rready,  output logic [31:0] s_rdata,
  output logic [1:0]  s_rresp,
  output logic        interrupt_o,
  // AXI4 read masters: one bundle per port (cmd, a, b, c), as Vitis makes them.
  output logic m_cmd_arvalid, input logic m_cmd_arready, output logic [63:0] m_cmd_araddr, output logic [7:0]  m_cmd_arlen, output logic [2:0]  m_cmd_arsize, output logic [1:0]  m_cmd_arburst,
  input logic m_cmd_rvalid, output logic m_cmd_rready, input logic [511:0] m_cmd_rdata, input logic [1:0]  m_cmd_rresp, input logic m_cmd_rlast,
  output logic m_a_arvalid, input logic m_a_arready, output logic [63:0] m_a_araddr, output logic [7:0]  m_a_arlen, output logic [2:0]  m_a_arsize, output logic [1:0]  m_a_arburst,
  input logic m_a_rvalid, output logic m_a_rready, input logic [511:0] m_a_rdata, input logic [1:0]  m_a_rresp, input logic m_a_rlast,
  output logic m_b_arvalid, input logic m_b_arready, output logic [63:0] m_b_araddr, output logic [7:0]  m_b_arlen, output logic [2:0]  m_b_arsize, output logic [1:0]  m_b_arburst,
  input logic m_b_rvalid, output logic m_b_rready, input logic [511:0] m_b_rdata, input logic [1:0]  m_b_rresp, input logic m_b_rlast,
  output logic m_c_arvalid, input logic m_c_arready, output logic [63:0] m_c_araddr, output logic [7:0]  m_c_arlen, output logic [2:0]  m_c_arsize, output logic [1:0]  m_c_arburst,
  input logic m_c_rvalid, output logic m_c_rready, input logic [511:0] m_c_rdata, input logic [1:0]  m_c_rresp, input logic m_c_rlast,
  // AXI4 write master (port c).
  output logic        m_c_awvalid, input logic m_c_awready, output logic [63:0] m_c_awaddr,
  output logic [7:0]  m_c_awlen, output logic [2:0] m_c_awsize, output logic [1:0] m_c_awburst,
  output logic        m_c_wvalid, input logic m_c_wready, output logic [511:0] m_c_wdata,
  output logic [63:0] m_c_wstrb, output logic m_c_wlast,
  input  logic        m_c_bvalid, output logic m_c_bready, input logic [1:0] m_c_bresp
);
  localparam int unsigned MaxM = systole_pkg::MaxM;
  localparam int unsigned MaxK = systole_pkg::MaxKPerRow * Rows;
  localparam int unsigned RowBits = $clog2(MaxM);
  localparam int unsigned RowBytesA = 2 * MaxK;    // an A row
  localparam int unsigned RowBytesB = 2 * Cols;    // a weight row
  localparam int unsigned RowBytesC = 4 * Cols;    // a C row, a bias row
  localparam int unsigned RowBytesMax = RowBytesA > RowBytesC ? (RowBytesA > 64 ? RowBytesA : 64)
                                                               : (RowBytesC > 64 ? RowBytesC : 64);
  localparam int unsigned PortCmd = 0, PortA = 1, PortB = 2, PortC = 3;
  // Sums leave the array Rows + Cols cycles after their activation entered;
  // the PE of row r, column c reads its weight r + c cycles after. A weight
  // bank may be reloaded Rows + Cols cycles after the last activation naming
  // it entered; the controller starts no computation before the array's
  // (resetless) valid bits have flushed for as long after reset.
  localparam int unsigned Quiet = Rows + Cols;

  // ---------------------------------------------------------------- registers
  logic        start;
  logic [63:0] command_addr, a_base, b_base, c_base, mem_bytes;
  logic        done_q;
  logic [31:0] status_q, error_index_q, descriptors_done_q;
  logic [63:0] busy_cycles_q, macs_q, dma_read_bytes_q, dma_write_bytes_q, stall_cycles_q;

  systole_axil_regs #(.Rows(Rows), .Cols(Cols)) u_regs (
    .clk_i, .rst_ni,
    .awvalid_i(s_awvalid), .awready_o(s_awready), .awaddr_i(s_awaddr),
    .wvalid_i(s_wvalid), .wready_o(s_wready), .wdata_i(s_wdata), .wstrb_i(s_wstrb),
    .bvalid_o(s_bvalid), .bready_i(s_bready), .bresp_o(s_bresp),
    .arvalid_i(s_arvalid), .arready_o(s_arready), .araddr_i(s_araddr),
    .rvalid_o(s_rvalid), .rready_i(s_rready), .rdata_o(s_rdata), .rresp_o(s_rresp),
    .interrupt_o,
    .start_o(start), .command_addr_o(command_addr), .a_base_o(a_base), .b_base_o(b_base),
    .c_base_o(c_base), .mem_bytes_o(mem_bytes),
    .done_i(done_q), .status_i(status_q), .error_index_i(error_index_q),
    .descriptors_done_i(descriptors_done_q), .busy_cycles_i(busy_cycles_q), .macs_i(macs_q),
    .dma_read_bytes_i(dma_read_bytes_q), .dma_write_bytes_i(dma_write_bytes_q),
    .stall_cycles_i(stall_cycles_q)
  );

  // ---------------------------------------------------------------- DMA
  // The four read bundles as arrays, index 0 cmd, 1 a, 2 b, 3 c.
  logic [3:0]        m_arvalid, m_arready, m_rvalid, m_rready, m_rlast;
  logic [63:0]       m_araddr [4];
  logic [7:0]        m_arlen [4];
  logic [2:0]        m_arsize [4];
  logic [1:0]        m_arburst [4], m_rresp [4];
  logic [511:0]      m_rdata [4];
  assign m_cmd_arvalid = m_arvalid[0];
  assign m_arready[0] = m_cmd_arready;
  assign m_cmd_araddr = m_araddr[0];
  assign m_cmd_arlen = m_arlen[0];
  assign m_cmd_arsize = m_arsize[0];
  assign m_cmd_arburst = m_arburst[0];
  assign m_rvalid[0] = m_cmd_rvalid;
  assign m_cmd_rready = m_rready[0];
  assign m_rdata[0] = m_cmd_rdata;
  assign m_rresp[0] = m_cmd_rresp;
  assign m_rlast[0] = m_cmd_rlast;
  assign m_a_arvalid = m_arvalid[1];
  assign m_arready[1] = m_a_arready;
  assign m_a_araddr = m_araddr[1];
  assign m_a_arlen = m_arlen[1];
  assign m_a_arsize = m_arsize[1];
  assign m_a_arburst = m_arburst[1];
  assign m_rvalid[1] = m_a_rvalid;
  assign m_a_rready = m_rready[1];
  assign m_rdata[1] = m_a_rdata;
  assign m_rresp[1] = m_a_rresp;
  assign m_rlast[1] = m_a_rlast;
  assign m_b_arvalid = m_arvalid[2];
  assign m_arready[2] = m_b_arready;
  assign m_b_araddr = m_araddr[2];
  assign m_b_arlen = m_arlen[2];
  assign m_b_arsize = m_arsize[2];
  assign m_b_arburst = m_arburst[2];
  assign m_rvalid[2] = m_b_rvalid;
  assign m_b_rready = m_rready[2];
  assign m_rdata[2] = m_b_rdata;
  assign m_rresp[2] = m_b_rresp;
  assign m_rlast[2] = m_b_rlast;
  assign m_c_arvalid = m_arvalid[3];
  assign m_arready[3] = m_c_arready;
  assign m_c_araddr = m_araddr[3];
  assign m_c_arlen = m_arlen[3];
  assign m_c_arsize = m_arsize[3];
  assign m_c_arburst = m_arburst[3];
  assign m_rvalid[3] = m_c_rvalid;
  assign m_c_rready = m_rready[3];
  assign m_rdata[3] = m_c_rdata;
  assign m_rresp[3] = m_c_rresp;
  assign m_rlast[3] = m_c_rlast;
  // Rows in through the read ports: index 0 cmd, 1 a, 2 b, 3 c. Each row
  // is as wide as the widest port's; a port uses its low bytes.
  logic [3:0]               rd_req_valid, rd_req_ready, rd_row_valid, rd_row_ready, rd_idle, rd_error;
  logic [63:0]              rd_addr [4];
  logic [31:0]              rd_bytes [4];
  logic [8*RowBytesMax-1:0] rd_row [4];
  logic                     clear_errors;

  for (genvar p = 0; p < 4; p++) begin : g_read
    localparam int unsigned PortRowBytes = p == PortA ? RowBytesA : p == PortB ? RowBytesB :
                                           p == PortC ? RowBytesC : 64;
    logic [8*PortRowBytes-1:0] row;
    systole_row_reader #(.RowBytes(PortRowBytes)) u_reader (
      .clk_i, .rst_ni,
      .req_valid_i(rd_req_valid[p]), .req_ready_o(rd_req_ready[p]),
      .req_addr_i(rd_addr[p]), .req_bytes_i(rd_bytes[p]),
      .row_valid_o(rd_row_valid[p]), .row_ready_i(rd_row_ready[p]), .row_o(row),
      .idle_o(rd_idle[p]), .error_o(rd_error[p]), .clear_error_i(clear_errors),
      .arvalid_o(m_arvalid[p]), .arready_i(m_arready[p]), .araddr_o(m_araddr[p]),
      .arlen_o(m_arlen[p]), .arsize_o(m_arsize[p]), .arburst_o(m_arburst[p]),
      .rvalid_i(m_rvalid[p]), .rready_o(m_rready[p]), .rdata_i(m_rdata[p]),
      .rresp_i(m_rresp[p]), .rlast_i(m_rlast[p])
    );
    assign rd_row[p] = (8*RowBytesMax)'(row);
  end

  logic         wr_req_valid, wr_req_ready, wr_data_valid, wr_data_ready, wr_idle, wr_error;
  logic [63:0]  wr_addr;
  logic [31:0]  wr_bytes;
  logic [511:0] wr_data;
  systole_dma_write u_write (
    .clk_i, .rst_ni,
    .req_valid_i(wr_req_valid), .req_ready_o(wr_req_ready), .req_addr_i(wr_addr),
    .req_bytes_i(wr_bytes), .data_valid_i(wr_data_valid), .data_ready_o(wr_data_ready),
    .data_i(wr_data), .idle_o(wr_idle), .error_o(wr_error), .clear_error_i(clear_errors),
    .awvalid_o(m_c_awvalid), .awready_i(m_c_awready), .awaddr_o(m_c_awaddr), .awlen_o(m_c_awlen),
    .awsize_o(m_c_awsize), .awburst_o(m_c_awburst), .wvalid_o(m_c_wvalid), .wready_i(m_c_wready),
    .wdata_o(m_c_wdata), .wstrb_o(m_c_wstrb), .wlast_o(m_c_wlast), .bvalid_i(m_c_bvalid),
    .bready_o(m_c_bready), .bresp_i(m_c_bresp)
  );

  // ---------------------------------------------------------------- checks
  logic [511:0] fetched_q;  // the header or descriptor just read
  logic [31:0]  header_error, descriptor_error;
  systole_validate #(.Rows(Rows)) u_validate (
    .beat_i(fetched_q), .mem_bytes_i(mem_bytes),
    .header_error_o(header_error), .descriptor_error_o(descriptor_error)
  );

  // ---------------------------------------------------------------- descriptor
  logic [3:0]  d_flags;
  logic [31:0] d_m, d_n, d_k, d_lda, d_ldb, d_ldc;
  logic [63:0] d_a, d_b, d_c, d_bias;
  logic [31:0] n_tiles, k_tiles, c_esize;
  logic        accumulate, bias_en, out_bf16;
  assign accumulate = d_flags[0];
  assign bias_en    = d_flags[1];
  assign out_bf16   = d_flags[3];
  assign c_esize    = out_bf16 ? 32'd2 : 32'd4;  // bytes per C element

  // Columns of N tile j (the last one may be partial).
  function automatic logic [31:0] tile_cols(logic [31:0] j);
    logic [31:0] left;
    left = d_n - j * Cols;
    tile_cols = left < Cols ? left : Cols;
  endfunction
  // The address of row m of N tile j of C (read by init, written by write).
  function automatic logic [63:0] c_row_addr(logic [31:0] m, logic [31:0] j);
    c_row_addr = c_base + d_c + (64'(m) * 64'(d_ldc) + 64'(j) * Cols) * 64'(c_esize);
  endfunction
  // The K index of weight row r of K tile t (row 0 is shifted in first and
  // travels to the bottom of the array).
  function automatic logic [31:0] weight_k(logic [31:0] t, logic [31:0] r);
    weight_k = t * Rows + (Rows - 1 - r);
  endfunction

  // ---------------------------------------------------------------- core
  logic               weight_shift, act_valid, init_valid, tile_done;
  logic [Cols*16-1:0] weight;
  logic [Rows*16-1:0] act;
  logic [Cols*32-1:0] init, word;
  logic [Cols*32-1:0] bias_q [2];   // per accumulator bank
  logic [MaxK*16-1:0] act_q [MaxM]; // the A block, one row per entry, zero-padded along K

  // Engine positions (N tile j, K tile t, K tiles so far g; systole_tile_counter).
  logic [31:0] wq_j, wq_t, wq_r, wq_g;        // weight rows requested (wq_g unused)
  logic [31:0] sh_j, sh_t, sh_r, sh_g;        // weight rows shifted in (sh_g: K tiles loaded)
  logic [31:0] st_j, st_t, st_m, st_g;        // activations streamed
  logic [31:0] in_j, in_asked, in_got, in_zeroed;  // init
  logic [31:0] wb_j, wb_m, wb_beat;           // write-back
  logic               wb_read_bank;
  logic [RowBits-1:0] wb_read_row;
  logic [31:0] inited_q, summed_q, written_q; // N tiles finished per engine
  // The weight row to request, and the ports that request or take one
  // ([0] port b, [1] port a).
  logic [63:0] weight_addr;
  logic [31:0] weight_bytes;
  logic [1:0]  weight_ask, weight_take;
  logic [$clog2(Quiet+1)-1:0] quiet_q [2];    // cycles until weight bank b may reload

  systole_core #(.Rows(Rows), .Cols(Cols), .MaxM(MaxM)) u_core (
    .clk_i,
    .weight_shift_i(weight_shift), .weight_bank_i(sh_g[0]), .weight_i(weight),
    .act_valid_i(act_valid), .act_bank_i(st_g[0]), .act_i(act),
    .act_acc_bank_i(st_j[0]), .act_row_i(RowBits'(st_m)),
    .act_last_i(st_t + 32'd1 == k_tiles && st_m + 32'd1 == d_m), .tile_done_o(tile_done),
    .init_valid_i(init_valid), .init_bank_i(in_j[0]), .init_row_i(RowBits'(accumulate ? in_got : in_zeroed)),
    .init_i(init),
    .read_bank_i(wb_read_bank), .read_row_i(wb_read_row),
    .bias_en_i(bias_en), .relu_en_i(d_flags[2]), .bf16_en_i(out_bf16), .bias_i(bias_q[wb_read_bank]),
    .word_o(word)
  );

  // ---------------------------------------------------------------- front
  typedef enum logic [3:0] {
    Idle, FetchHeader, CheckHeader, FetchCheck, Check, FetchRun, Decode, LoadA, Compute, Finish
  } state_e;
  state_e      state_q;
  logic        cmd_asked_q;
  logic [31:0] count_q, index_q;       // descriptors, the current one
  logic [31:0] a_asked_q, a_got_q;     // A rows requested, stored
  logic [$clog2(Quiet+1)-1:0] warm_q;  // cycles since reset, up to Quiet
  logic        fetching, computing, error_seen;

  assign fetching   = state_q == FetchHeader || state_q == FetchCheck || state_q == FetchRun;
  assign computing  = state_q == Compute;
  assign error_seen = rd_error != '0 || wr_error;
  assign clear_errors = state_q == Idle && start;

  // Beats arriving this cycle over all read ports (the engines overlap, so
  // several ports can take one in the same cycle).
  logic [2:0] read_beats;
  always_comb begin
    read_beats = '0;
    for (int p = 0; p < 4; p++) read_beats = read_beats + {2'b0, m_rvalid[p] && m_rready[p]};
  end

  // The command port reads the header and the descriptors, one at a time.
  assign rd_req_valid[PortCmd] = fetching && !cmd_asked_q;
  assign rd_addr[PortCmd]      = state_q == FetchHeader ? command_addr : command_addr + 64'd64 * (64'(index_q) + 64'd1);
  assign rd_bytes[PortCmd]     = 32'd64;
  assign rd_row_ready[PortCmd] = fetching;

  // A: every row into the activation buffer. During Compute the port is
  // idle for A and carries half of the weight rows (weight engine).
  assign rd_req_valid[PortA] = state_q == LoadA ? a_asked_q < d_m : weight_ask[1];
  assign rd_addr[PortA]      = state_q == LoadA ? a_base + d_a + 64'(a_asked_q) * 64'(d_lda) * 64'd2 : weight_addr;
  assign rd_bytes[PortA]     = state_q == LoadA ? d_k * 32'd2 : weight_bytes;
  assign rd_row_ready[PortA] = state_q == LoadA || weight_take[1];
  logic [MaxK*16-1:0] a_row;  // the arriving row, zero-padded along K
  always_comb begin
    for (int k = 0; k < MaxK; k++) a_row[16*k +: 16] = 32'(k) < d_k ? rd_row[PortA][16*k +: 16] : 16'b0;
  end

  task automatic finish(input logic [31:0] code, input logic [31:0] index);
    status_q      <= code;
    error_index_q <= index;
    state_q       <= Finish;
  endtask

  always_ff @(posedge clk_i) begin
    done_q <= 1'b0;
    if (!rst_ni) begin
      state_q     <= Idle;
      cmd_asked_q <= 1'b0;
      warm_q      <= '0;
    end else begin
      if (warm_q != ($clog2(Quiet+1))'(Quiet)) warm_q <= warm_q + 1'b1;
      if (state_q != Idle) busy_cycles_q <= busy_cycles_q + 64'd1;
      dma_read_bytes_q <= dma_read_bytes_q + 64'd64 * 64'(read_beats);
      if (m_c_wvalid && m_c_wready) dma_write_bytes_q <= dma_write_bytes_q + 64'd64;
      if (rd_req_valid[PortCmd] && rd_req_ready[PortCmd]) cmd_asked_q <= 1'b1;
      if (fetching && rd_row_valid[PortCmd]) begin
        cmd_asked_q <= 1'b0;
        fetched_q   <= rd_row[PortCmd][511:0];
      end
      unique case (state_q)
        Idle: if (start) begin
          busy_cycles_q      <= '0;
          macs_q             <= '0;
          dma_read_bytes_q   <= '0;
          dma_write_bytes_q  <= '0;
          stall_cycles_q     <= '0;
          descriptors_done_q <= '0;
          state_q            <= FetchHeader;
        end
        FetchHeader, FetchCheck, FetchRun: if (rd_row_valid[PortCmd]) begin
          if (error_seen) finish(systole_pkg::ErrAxiError,
                                 state_q == FetchHeader ? systole_pkg::HeaderErrorIndex : index_q);
          else state_q <= state_q == FetchHeader ? CheckHeader : state_q == FetchCheck ? Check : Decode;
        end
        CheckHeader:
          if (header_error != systole_pkg::ErrOk) finish(header_error, systole_pkg::HeaderErrorIndex);
          else begin
            count_q <= fetched_q[8*systole_pkg::HdrCountByte +: 32];
            index_q <= '0;
            state_q <= FetchCheck;
          end
        Check:
          if (descriptor_error != systole_pkg::ErrOk) finish(descriptor_error, index_q);
          else if (index_q + 32'd1 == count_q) begin
            index_q <= '0;
            state_q <= FetchRun;
          end else begin
            index_q <= index_q + 32'd1;
            state_q <= FetchCheck;
          end
        Decode: begin
          d_flags   <= fetched_q[8*systole_pkg::DescFlagsByte +: 4];
          d_m       <= fetched_q[8*systole_pkg::DescMByte +: 32];
          d_n       <= fetched_q[8*systole_pkg::DescNByte +: 32];
          d_k       <= fetched_q[8*systole_pkg::DescKByte +: 32];
          d_lda     <= fetched_q[8*systole_pkg::DescLdaByte +: 32];
          d_ldb     <= fetched_q[8*systole_pkg::DescLdbByte +: 32];
          d_ldc     <= fetched_q[8*systole_pkg::DescLdcByte +: 32];
          d_a       <= fetched_q[8*systole_pkg::DescAAddrByte +: 64];
          d_b       <= fetched_q[8*systole_pkg::DescBAddrByte +: 64];
          d_c       <= fetched_q[8*systole_pkg::DescCAddrByte +: 64];
          d_bias    <= fetched_q[8*systole_pkg::DescBiasAddrByte +: 64];
          n_tiles   <= (fetched_q[8*systole_pkg::DescNByte +: 32] + Cols - 1) / Cols;
          k_tiles   <= (fetched_q[8*systole_pkg::DescKByte +: 32] + Rows - 1) / Rows;
          a_asked_q <= '0;
          a_got_q   <= '0;
          state_q   <= LoadA;
        end
        LoadA: begin
          if (rd_req_valid[PortA] && rd_req_ready[PortA]) a_asked_q <= a_asked_q + 32'd1;
          if (rd_row_valid[PortA]) begin
            act_q[a_got_q[RowBits-1:0]] <= a_row;
            a_got_q <= a_got_q + 32'd1;
          end
          if (a_got_q == d_m && warm_q == ($clog2(Quiet+1))'(Quiet)) state_q <= Compute;
        end
        Compute: begin
          if (act_valid == 1'b0 && st_j < n_tiles) stall_cycles_q <= stall_cycles_q + 64'd1;
          if (written_q == n_tiles && wr_idle && rd_idle == '1) begin
            if (error_seen) finish(systole_pkg::ErrAxiError, index_q);
            else begin
              macs_q             <= macs_q + 64'(d_m) * 64'(d_n) * 64'(d_k);
              descriptors_done_q <= descriptors_done_q + 32'd1;
              if (index_q + 32'd1 == count_q) finish(systole_pkg::ErrOk, '0);
              else begin
                index_q <= index_q + 32'd1;
                state_q <= FetchRun;
              end
            end
          end
        end
        Finish: begin
          done_q  <= 1'b1;
          state_q <= Idle;
        end
        default: state_q <= Idle;
      endcase
    end
  end

  // ---------------------------------------------------------------- weight engine
  // Requests: every weight row of every (N tile, K tile), in shift order;
  // rows past K are not read (they shift in as zeros). A K tile's weights
  // are Rows rows of 2 Cols bytes, which one port brings in no faster than
  // the array streams M rows (at 128x128 with M = 256, half as fast), so
  // even rows come through port b and odd rows through port a, idle
  // during Compute. Both ports reach the same memory.
  logic [31:0] wq_k, sh_k;
  logic        wq_active, wq_port_ready, sh_active, sh_bank_free, shift_zero, sh_row_valid;
  logic [8*RowBytesMax-1:0] sh_row;
  assign wq_k          = weight_k(wq_t, wq_r);
  assign wq_active     = computing && wq_j < n_tiles;
  assign weight_ask    = (wq_active && wq_k < d_k) ? (wq_r[0] ? 2'b10 : 2'b01) : 2'b00;
  assign weight_addr   = b_base + d_b + (64'(wq_k) * 64'(d_ldb) + 64'(wq_j) * Cols) * 64'd2;
  assign weight_bytes  = tile_cols(wq_j) * 32'd2;
  assign wq_port_ready = wq_r[0] ? rd_req_ready[PortA] : rd_req_ready[PortB];
  assign rd_req_valid[PortB] = weight_ask[0];
  assign rd_addr[PortB]      = weight_addr;
  assign rd_bytes[PortB]     = weight_bytes;

  // Shifts: a K tile goes into weight bank g % 2 once tile g - 2, the bank's
  // last user, has streamed and left the PEs; its rows shift as they arrive.
  assign sh_k         = weight_k(sh_t, sh_r);
  assign sh_active    = computing && sh_j < n_tiles;
  assign sh_bank_free = sh_r != '0 || (st_g + 32'd1 >= sh_g && quiet_q[sh_g[0]] == '0);
  assign shift_zero   = sh_k >= d_k;
  assign sh_row_valid = sh_r[0] ? rd_row_valid[PortA] : rd_row_valid[PortB];
  assign sh_row       = sh_r[0] ? rd_row[PortA] : rd_row[PortB];
  assign weight_shift = sh_active && sh_bank_free && (shift_zero || sh_row_valid);
  assign weight_take  = (weight_shift && !shift_zero) ? (sh_r[0] ? 2'b10 : 2'b01) : 2'b00;
  assign rd_row_ready[PortB] = weight_take[0];
  always_comb begin
    for (int c = 0; c < Cols; c++)
      weight[16*c +: 16] = (!shift_zero && 32'(c) < tile_cols(sh_j)) ? sh_row[16*c +: 16] : 16'b0;
  end

  systole_tile_counter u_requested (
    .clk_i, .clear_i(state_q == Decode), .step_i(wq_active && (wq_k >= d_k || wq_port_ready)),
    .steps_i(Rows), .k_tiles_i(k_tiles), .j_o(wq_j), .t_o(wq_t), .i_o(wq_r), .g_o(wq_g)
  );
  logic unused_wq_g;
  assign unused_wq_g = ^wq_g;
  systole_tile_counter u_shifted (
    .clk_i, .clear_i(state_q == Decode), .step_i(weight_shift),
    .steps_i(Rows), .k_tiles_i(k_tiles), .j_o(sh_j), .t_o(sh_t), .i_o(sh_r), .g_o(sh_g)
  );

  // ---------------------------------------------------------------- stream engine
  // One activation row per cycle once its K tile's weights are in and, for
  // the first row of an N tile, its accumulator bank is initialised.
  logic st_active;
  assign st_active = computing && st_j < n_tiles;
  assign act_valid = st_active && sh_g > st_g &&
                     (st_t != '0 || st_m != '0 || inited_q > st_j);
  assign act       = act_q[st_m[RowBits-1:0]][Rows*16*st_t +: Rows*16];

  always_ff @(posedge clk_i) begin
    for (int b = 0; b < 2; b++) begin
      if (act_valid && st_g[0] == 1'(b)) quiet_q[b] <= ($clog2(Quiet+1))'(Quiet);
      else if (quiet_q[b] != '0) quiet_q[b] <= quiet_q[b] - 1'b1;
    end
    if (state_q == Decode) summed_q <= '0;
    else if (tile_done) summed_q <= summed_q + 32'd1;
  end

  systole_tile_counter u_streamed (
    .clk_i, .clear_i(state_q == Decode), .step_i(act_valid),
    .steps_i(d_m), .k_tiles_i(k_tiles), .j_o(st_j), .t_o(st_t), .i_o(st_m), .g_o(st_g)
  );

  // ---------------------------------------------------------------- init engine
  // N tile in_j's bank is free once tile in_j - 2 is written back. Port c
  // reads its C rows (when accumulating), then its bias row.
  logic        in_active, in_row_is_c, in_asks_c;
  logic [31:0] in_rows, in_total;
  assign in_rows     = accumulate ? d_m : '0;
  assign in_total    = in_rows + (bias_en ? 32'd1 : 32'd0);
  assign in_active   = computing && in_j < n_tiles && written_q + 32'd1 >= in_j;
  assign in_asks_c   = in_asked < in_rows;
  assign in_row_is_c = in_got < in_rows;
  assign rd_req_valid[PortC] = in_active && in_asked < in_total;
  assign rd_addr[PortC]      = in_asks_c
      ? c_row_addr(in_asked, in_j)
      : c_base + d_bias + 64'(in_j) * Cols * 64'd4;
  assign rd_bytes[PortC]     = tile_cols(in_j) * (in_asks_c ? c_esize : 32'd4);
  assign rd_row_ready[PortC] = in_active;
  assign init_valid = in_active && (accumulate ? rd_row_valid[PortC] && in_row_is_c : in_zeroed < d_m);
  logic [Cols*32-1:0] bias_row;  // the arriving bias row, zero past the tile
  always_comb begin
    init = '0;
    bias_row = '0;
    for (int c = 0; c < Cols; c++)
      if (accumulate && 32'(c) < tile_cols(in_j))
        init[32*c +: 32] = out_bf16 ? {rd_row[PortC][16*c +: 16], 16'b0} : rd_row[PortC][32*c +: 32];
    for (int c = 0; c < Cols; c++)
      if (32'(c) < tile_cols(in_j)) bias_row[32*c +: 32] = rd_row[PortC][32*c +: 32];
  end

  always_ff @(posedge clk_i) begin
    if (state_q == Decode) begin
      {in_j, in_asked, in_got, in_zeroed} <= '0;
      inited_q <= '0;
    end else if (in_active) begin
      if (rd_req_valid[PortC] && rd_req_ready[PortC]) in_asked <= in_asked + 32'd1;
      if (rd_row_valid[PortC]) begin
        in_got <= in_got + 32'd1;
        if (!in_row_is_c) bias_q[in_j[0]] <= bias_row;
      end
      if (!accumulate && in_zeroed < d_m) in_zeroed <= in_zeroed + 32'd1;
      if (in_got == in_total && (accumulate || in_zeroed == d_m)) begin
        {in_asked, in_got, in_zeroed} <= '0;
        in_j     <= in_j + 32'd1;
        inited_q <= inited_q + 32'd1;
      end
    end
  end

  // ---------------------------------------------------------------- write engine
  // Once N tile wb_j's last sums are in, its rows go out one per write
  // request: the core's word_o holds the named row's output-stage words, so
  // the request takes them and names the next row in the same cycle; the
  // row's beats follow while the DMA is busy with them (it takes the next
  // request only when they are all sent).
  localparam int unsigned WbRowBits = 8 * RowBytesC > 512 ? 8 * RowBytesC : 512;
  logic [WbRowBits-1:0] wb_row_q;  // the row being sent, packed: byte i at [8i +: 8]
  logic [31:0]          wb_bytes_q;
  logic                 wb_accept;
  assign wr_req_valid  = computing && wb_j < n_tiles && summed_q > wb_j;
  assign wr_addr       = c_row_addr(wb_m, wb_j);
  assign wr_bytes      = tile_cols(wb_j) * c_esize;
  assign wb_accept     = wr_req_valid && wr_req_ready;
  assign wr_data_valid = wb_beat * 64 < wb_bytes_q;
  assign wr_data       = 512'(wb_row_q >> (512 * wb_beat));
  // The row the core reads out: the next one as soon as this one is taken.
  assign wb_read_bank  = (wb_accept && wb_m + 32'd1 == d_m) ? ~wb_j[0] : wb_j[0];
  assign wb_read_row   = (wb_accept && wb_m + 32'd1 != d_m) ? RowBits'(wb_m + 32'd1) : wb_accept ? '0 : RowBits'(wb_m);

  always_ff @(posedge clk_i) begin
    if (state_q == Decode) begin
      {wb_j, wb_m, wb_beat, wb_bytes_q} <= '0;
      written_q <= '0;
    end else begin
      if (wr_data_valid && wr_data_ready) wb_beat <= wb_beat + 32'd1;
      if (wb_accept) begin
        for (int c = 0; c < Cols; c++) begin
          if (out_bf16) wb_row_q[16*c +: 16] <= word[32*c +: 16];
          else wb_row_q[32*c +: 32] <= word[32*c +: 32];
        end
        wb_beat    <= '0;
        wb_bytes_q <= wr_bytes;
        wb_m       <= wb_m + 32'd1;
        if (wb_m + 32'd1 == d_m) begin
          wb_m      <= '0;
          wb_j      <= wb_j + 32'd1;
          written_q <= written_q + 32'd1;
        end
      end
    end
  end
endmodule
