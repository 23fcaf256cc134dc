// The Systole kernel: AXI4-Lite registers, four AXI4 master ports (cmd, a,
// b: read; c: read and write) and a sequential controller around the
// compute core. It follows hw/hls/systole_kernel.h step for step:
//   fetch and check the header, check every descriptor (nothing runs unless
//   all are valid), then per descriptor load A's rows into the activation
//   buffer and, per N tile of Cols columns, start the accumulators from C
//   or +0, shift in each K tile's weights (bottom row first) and stream the
//   M activation rows through the array, drain, read the bias, and write C.
// Stages do not overlap yet: correctness first, utilisation later (the
// core's second weight bank is ready for it). Any SLVERR/DECERR ends the
// launch with ErrAxiError at the current descriptor.
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
  localparam int unsigned RowBytesA = 2 * MaxK;
  localparam int unsigned RowBytesC = 4 * Cols;
  localparam int unsigned RowBytes = 64 * (((RowBytesA > RowBytesC ? RowBytesA : RowBytesC) + 63) / 64);
  localparam int unsigned PortCmd = 0, PortA = 1, PortB = 2, PortC = 3;

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
  logic [3:0]        rd_req_valid, rd_req_ready, rd_beat_valid, rd_beat_ready, rd_beat_last, rd_error;
  logic [63:0]       rd_addr;
  logic [31:0]       rd_bytes;
  logic [511:0]      rd_beat [4];
  logic              clear_errors;

  for (genvar p = 0; p < 4; p++) begin : g_read
    systole_dma_read u_read (
      .clk_i, .rst_ni,
      .req_valid_i(rd_req_valid[p]), .req_ready_o(rd_req_ready[p]),
      .req_addr_i(rd_addr), .req_bytes_i(rd_bytes),
      .beat_valid_o(rd_beat_valid[p]), .beat_ready_i(rd_beat_ready[p]), .beat_o(rd_beat[p]),
      .beat_last_o(rd_beat_last[p]), .error_o(rd_error[p]), .clear_error_i(clear_errors),
      .arvalid_o(m_arvalid[p]), .arready_i(m_arready[p]), .araddr_o(m_araddr[p]),
      .arlen_o(m_arlen[p]), .arsize_o(m_arsize[p]), .arburst_o(m_arburst[p]),
      .rvalid_i(m_rvalid[p]), .rready_o(m_rready[p]), .rdata_i(m_rdata[p]),
      .rresp_i(m_rresp[p]), .rlast_i(m_rlast[p])
    );
  end

  logic        wr_req_valid, wr_req_ready, wr_data_valid, wr_data_ready, wr_error;
  logic [63:0] wr_addr;
  logic [31:0] wr_bytes;
  logic [511:0] wr_data;
  systole_dma_write u_write (
    .clk_i, .rst_ni,
    .req_valid_i(wr_req_valid), .req_ready_o(wr_req_ready), .req_addr_i(wr_addr),
    .req_bytes_i(wr_bytes), .data_valid_i(wr_data_valid), .data_ready_o(wr_data_ready),
    .data_i(wr_data), .error_o(wr_error), .clear_error_i(clear_errors),
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

  // ---------------------------------------------------------------- core
  logic                  weight_shift, weight_bank, act_valid, act_bank, init_valid;
  logic                  clear_row, read_valid;
  // word_o follows the row index one cycle later and holds while it does,
  // so the controller needs no valid strobe.
  /* verilator lint_off UNUSEDSIGNAL */
  logic                  word_valid;
  /* verilator lint_on UNUSEDSIGNAL */
  // Lane vectors, flat as the core takes them: lane i at [16i +: 16] or
  // [32i +: 32].
  logic [Cols*16-1:0]    weight;
  logic [Rows*16-1:0]    act;
  logic [Cols*32-1:0]    init, bias_q, word;
  logic [$clog2(MaxM)-1:0] row_index;

  // The descriptor being executed.
  logic [3:0]  d_flags;
  logic [31:0] d_m, d_n, d_k, d_lda, d_ldb, d_ldc;
  logic [63:0] d_a, d_b, d_c, d_bias;
  logic        out_bf16;
  assign out_bf16 = d_flags[3];

  systole_core #(.Rows(Rows), .Cols(Cols), .MaxM(MaxM)) u_core (
    .clk_i,
    .weight_shift_i(weight_shift), .weight_bank_i(weight_bank), .weight_i(weight),
    .act_valid_i(act_valid), .act_bank_i(act_bank), .act_i(act),
    .init_valid_i(init_valid), .init_row_i(row_index), .init_i(init),
    .clear_row_i(clear_row), .rows_i(($clog2(MaxM)+1)'(d_m)),
    .read_valid_i(read_valid), .read_row_i(row_index),
    .bias_en_i(d_flags[1]), .relu_en_i(d_flags[2]), .bf16_en_i(out_bf16), .bias_i(bias_q),
    .word_valid_o(word_valid), .word_o(word)
  );

  // ---------------------------------------------------------------- buffers
  logic [8*RowBytes-1:0] row_q;      // one row, byte i at [8i +: 8] (byte 0 = the first requested)
  logic [MaxK*16-1:0] act_q [MaxM];  // the A block, one row per entry, zero-padded along K
  logic [MaxK*16-1:0] a_row;         // the row in row_q, as the buffer stores it

  // ---------------------------------------------------------------- control
  typedef enum logic [4:0] {
    Idle, FetchHeader, CheckHeader, FetchCheck, Check, FetchRun, Decode,
    LoadA, StoreA, InitRow, InitStore, ClearRows, LoadWeight, ShiftWeight, Stream, Drain,
    LoadBias, StoreBias, ReadOut, WriteOut, WriteWait, NextTile, Finish,
    ReadRequest, ReadBeats
  } state_e;
  state_e state_q, return_q;

  logic [1:0]  read_port_q;
  logic [63:0] read_addr_q;
  logic [31:0] read_bytes_q;
  logic [31:0] beat_count_q;
  logic [31:0] count_q, index_q;       // descriptors, current one
  logic [31:0] m_q, n0_q, t_q, r_q, k_tiles, cols;
  logic [31:0] weight_k;  // the K index of the weight row being loaded
  logic [31:0] write_beat_q, write_bytes_q;
  logic        error_seen;

  assign k_tiles = (d_k + Rows - 1) / Rows;
  assign weight_k = t_q * Rows + (Rows - 1 - r_q);
  assign cols = (d_n - n0_q < Cols) ? d_n - n0_q : Cols;
  assign error_seen = (rd_error != '0) || wr_error;

  // Requests go to the selected port only.
  always_comb begin
    rd_req_valid = '0;
    rd_beat_ready = '0;
    if (state_q == ReadRequest) rd_req_valid[read_port_q] = 1'b1;
    if (state_q == ReadBeats) rd_beat_ready[read_port_q] = 1'b1;
  end
  assign rd_addr = read_addr_q;
  assign rd_bytes = read_bytes_q;

  // Lanes of the row buffer.
  function automatic logic [15:0] row16(logic [8*RowBytes-1:0] row, int unsigned lane);
    row16 = row[16*lane +: 16];
  endfunction
  function automatic logic [31:0] row32(logic [8*RowBytes-1:0] row, int unsigned lane);
    row32 = row[32*lane +: 32];
  endfunction

  always_comb begin
    weight = '0;
    init = '0;
    act = '0;
    for (int c = 0; c < Cols; c++) begin
      if (state_q == ShiftWeight && 32'(c) < cols && weight_k < d_k) weight[16*c +: 16] = row16(row_q, c);
      if (state_q == InitStore && d_flags[0] && 32'(c) < cols)
        init[32*c +: 32] = out_bf16 ? {row16(row_q, c), 16'b0} : row32(row_q, c);
    end
    for (int r = 0; r < Rows; r++) act[16*r +: 16] = act_q[m_q[$clog2(MaxM)-1:0]][16 * (t_q * Rows + r) +: 16];
    for (int k = 0; k < MaxK; k++) a_row[16*k +: 16] = 32'(k) < d_k ? row16(row_q, k) : 16'b0;
  end
  assign weight_shift = state_q == ShiftWeight;
  assign weight_bank  = t_q[0];
  assign act_valid    = state_q == Stream;
  assign act_bank     = t_q[0];
  assign init_valid   = state_q == InitStore;
  assign clear_row    = state_q == ClearRows;
  assign read_valid   = state_q == ReadOut;
  assign row_index    = m_q[$clog2(MaxM)-1:0];

  // C row bytes for the write DMA: beat write_beat_q of the packed row.
  always_comb begin
    wr_data = row_q[512 * write_beat_q +: 512];
  end
  assign wr_req_valid  = state_q == WriteOut;
  assign wr_addr       = c_base + d_c + (64'(m_q) * 64'(d_ldc) + 64'(n0_q)) * (out_bf16 ? 64'd2 : 64'd4);
  assign wr_bytes      = cols * (out_bf16 ? 32'd2 : 32'd4);
  assign wr_data_valid = state_q == WriteWait && write_beat_q * 64 < write_bytes_q;
  assign clear_errors  = state_q == Idle && start;

  // Starts a read of [addr, addr + bytes) on `port` into row_q; control
  // continues in state `next` when the last beat has arrived.
  task automatic read_row(input logic [1:0] port, input logic [63:0] addr,
                          input logic [31:0] bytes, input state_e next);
    read_port_q  <= port;
    read_addr_q  <= addr;
    read_bytes_q <= bytes;
    beat_count_q <= '0;
    return_q     <= next;
    state_q      <= ReadRequest;
  endtask

  task automatic finish(input logic [31:0] code, input logic [31:0] index);
    status_q      <= code;
    error_index_q <= index;
    state_q       <= Finish;
  endtask

  always_ff @(posedge clk_i) begin
    done_q <= 1'b0;
    if (!rst_ni) begin
      state_q <= Idle;
    end else begin
      if (state_q != Idle) busy_cycles_q <= busy_cycles_q + 64'd1;
      if (m_rvalid != '0 && (m_rvalid & m_rready) != '0) dma_read_bytes_q <= dma_read_bytes_q + 64'd64;
      if (m_c_wvalid && m_c_wready) dma_write_bytes_q <= dma_write_bytes_q + 64'd64;
      unique case (state_q)
        Idle: if (start) begin
          busy_cycles_q <= '0;
          macs_q <= '0;
          dma_read_bytes_q <= '0;
          dma_write_bytes_q <= '0;
          stall_cycles_q <= '0;
          descriptors_done_q <= '0;
          read_row(2'(PortCmd), command_addr, 32'd64, CheckHeader);
        end
        ReadRequest: if (rd_req_ready[read_port_q]) state_q <= ReadBeats;
        ReadBeats: begin
          if (!rd_beat_valid[read_port_q]) stall_cycles_q <= stall_cycles_q + 64'd1;
          else begin
            // Byte p of beat j is row byte 64 j + p - (addr % 64).
            for (int p = 0; p < 64; p++) begin
              logic signed [40:0] at;
              at = 41'(64 * beat_count_q) + 41'(p) - 41'(read_addr_q[5:0]);
              if (at >= 0 && at < 41'(RowBytes)) row_q[8 * at[$clog2(RowBytes)-1:0] +: 8] <= rd_beat[read_port_q][8*p +: 8];
            end
            fetched_q <= rd_beat[read_port_q];
            beat_count_q <= beat_count_q + 32'd1;
            if (rd_beat_last[read_port_q]) state_q <= error_seen ? Finish : return_q;
            if (rd_beat_last[read_port_q] && error_seen) begin
              status_q <= systole_pkg::ErrAxiError;
              error_index_q <= return_q == CheckHeader ? systole_pkg::HeaderErrorIndex : index_q;
            end
          end
        end
        CheckHeader:
          if (header_error != systole_pkg::ErrOk) finish(header_error, systole_pkg::HeaderErrorIndex);
          else begin
            count_q <= fetched_q[8*systole_pkg::HdrCountByte +: 32];
            index_q <= '0;
            state_q <= FetchCheck;
          end
        FetchCheck: read_row(2'(PortCmd), command_addr + 64'd64 * (64'(index_q) + 64'd1), 32'd64, Check);
        Check:
          if (descriptor_error != systole_pkg::ErrOk) finish(descriptor_error, index_q);
          else if (index_q + 32'd1 == count_q) begin
            index_q <= '0;
            state_q <= FetchRun;
          end else begin
            index_q <= index_q + 32'd1;
            state_q <= FetchCheck;
          end
        FetchRun: read_row(2'(PortCmd), command_addr + 64'd64 * (64'(index_q) + 64'd1), 32'd64, Decode);
        Decode: begin
          d_flags <= fetched_q[8*systole_pkg::DescFlagsByte +: 4];
          d_m     <= fetched_q[8*systole_pkg::DescMByte +: 32];
          d_n     <= fetched_q[8*systole_pkg::DescNByte +: 32];
          d_k     <= fetched_q[8*systole_pkg::DescKByte +: 32];
          d_lda   <= fetched_q[8*systole_pkg::DescLdaByte +: 32];
          d_ldb   <= fetched_q[8*systole_pkg::DescLdbByte +: 32];
          d_ldc   <= fetched_q[8*systole_pkg::DescLdcByte +: 32];
          d_a     <= fetched_q[8*systole_pkg::DescAAddrByte +: 64];
          d_b     <= fetched_q[8*systole_pkg::DescBAddrByte +: 64];
          d_c     <= fetched_q[8*systole_pkg::DescCAddrByte +: 64];
          d_bias  <= fetched_q[8*systole_pkg::DescBiasAddrByte +: 64];
          m_q     <= '0;
          state_q <= LoadA;
        end
        // A: every row into the activation buffer, zero-padded along K.
        LoadA: read_row(2'(PortA), a_base + d_a + 64'(m_q) * 64'(d_lda) * 64'd2, d_k * 32'd2, StoreA);
        StoreA: begin
          act_q[m_q[$clog2(MaxM)-1:0]] <= a_row;
          if (m_q + 32'd1 == d_m) begin
            m_q <= '0;
            n0_q <= '0;
            state_q <= InitRow;
          end else begin
            m_q <= m_q + 32'd1;
            state_q <= LoadA;
          end
        end
        // Accumulators of this N tile: C (when accumulating) or +0.
        InitRow:
          if (d_flags[0])
            read_row(2'(PortC), c_base + d_c + (64'(m_q) * 64'(d_ldc) + 64'(n0_q)) * (out_bf16 ? 64'd2 : 64'd4),
                     cols * (out_bf16 ? 32'd2 : 32'd4), InitStore);
          else state_q <= InitStore;
        InitStore:
          if (m_q + 32'd1 == d_m) begin
            m_q <= '0;
            state_q <= ClearRows;
          end else begin
            m_q <= m_q + 32'd1;
            state_q <= InitRow;
          end
        ClearRows: begin
          t_q <= '0;
          r_q <= '0;
          state_q <= LoadWeight;
        end
        // Weights of K tile t, bottom row first; rows past K shift zeros.
        LoadWeight:
          if (weight_k < d_k)
            read_row(2'(PortB), b_base + d_b + (64'(weight_k) * 64'(d_ldb) + 64'(n0_q)) * 64'd2,
                     cols * 32'd2, ShiftWeight);
          else state_q <= ShiftWeight;
        ShiftWeight:
          if (r_q + 32'd1 == Rows) begin
            r_q <= '0;
            m_q <= '0;
            state_q <= Stream;
          end else begin
            r_q <= r_q + 32'd1;
            state_q <= LoadWeight;
          end
        Stream:
          if (m_q + 32'd1 == d_m) begin
            r_q <= '0;
            state_q <= Drain;
          end else m_q <= m_q + 32'd1;
        Drain:
          if (r_q == Rows + Cols + 2) begin
            r_q <= '0;
            if (t_q + 32'd1 == k_tiles) begin
              m_q <= '0;
              state_q <= LoadBias;
            end else begin
              t_q <= t_q + 32'd1;
              state_q <= LoadWeight;
            end
          end else r_q <= r_q + 32'd1;
        LoadBias:
          if (d_flags[1]) read_row(2'(PortC), c_base + d_bias + 64'(n0_q) * 64'd4, cols * 32'd4, StoreBias);
          else state_q <= ReadOut;
        StoreBias: begin
          for (int c = 0; c < Cols; c++) bias_q[32*c +: 32] <= row32(row_q, c);
          state_q <= ReadOut;
        end
        // C: one row at a time through the output stage and the write DMA.
        ReadOut: state_q <= WriteOut;
        WriteOut: if (wr_req_ready) begin
          for (int c = 0; c < Cols; c++) begin
            if (out_bf16) row_q[16*c +: 16] <= word[32*c +: 16];
            else row_q[32*c +: 32] <= word[32*c +: 32];
          end
          write_beat_q <= '0;
          write_bytes_q <= wr_bytes;
          state_q <= WriteWait;
        end
        WriteWait: begin
          if (wr_data_valid && wr_data_ready) write_beat_q <= write_beat_q + 32'd1;
          if (!wr_data_valid && wr_req_ready) begin
            if (error_seen) finish(systole_pkg::ErrAxiError, index_q);
            else if (m_q + 32'd1 == d_m) state_q <= NextTile;
            else begin
              m_q <= m_q + 32'd1;
              state_q <= ReadOut;
            end
          end
        end
        NextTile:
          if (n0_q + Cols < d_n) begin
            n0_q <= n0_q + Cols;
            m_q <= '0;
            state_q <= InitRow;
          end else begin
            macs_q <= macs_q + 64'(d_m) * 64'(d_n) * 64'(d_k);
            descriptors_done_q <= descriptors_done_q + 32'd1;
            if (index_q + 32'd1 == count_q) finish(systole_pkg::ErrOk, '0);
            else begin
              index_q <= index_q + 32'd1;
              state_q <= FetchRun;
            end
          end
        Finish: begin
          done_q <= 1'b1;
          state_q <= Idle;
        end
        default: state_q <= Idle;
      endcase
    end
  end
endmodule
