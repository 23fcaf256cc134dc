// SPDX-License-Identifier: Apache-2.0
// The kernel's performance counters, cleared when a launch starts and
// latched by the registers when it ends: busy cycles, MACs of completed
// descriptors, bytes moved by the read ports and the write ports, cycles
// the array waited for operands, descriptors completed.
module systole_counters #(
  parameter int unsigned ReadPorts = 4,
  parameter int unsigned WritePorts = 1
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic                 launch_i,     // clear
  input  logic                 busy_i,
  input  logic [ReadPorts-1:0] read_beat_i,  // a beat arrived on read port p
  input  logic [WritePorts-1:0] write_beat_i,  // a beat left on write port p
  input  logic                 stall_i,
  input  logic                 finished_i,   // a descriptor completed...
  input  logic [63:0]          macs_i,       // ...with this many MACs
  output logic [63:0]          busy_cycles_o,
  output logic [63:0]          macs_o,
  output logic [63:0]          read_bytes_o,
  output logic [63:0]          write_bytes_o,
  output logic [63:0]          stall_cycles_o,
  output logic [31:0]          descriptors_o
);
  localparam logic [63:0] BeatBytes = 64'(systole_pkg::BeatBytes);

  typedef struct packed {
    logic [63:0] busy, macs, read_bytes, write_bytes, stall;
    logic [31:0] descriptors;
  } counts_t;
  counts_t     c_d, c_q;
  logic [63:0] read_beats, write_beats;

  always_comb begin
    read_beats  = '0;
    write_beats = '0;
    for (int p = 0; p < ReadPorts; p++) read_beats = read_beats + 64'(read_beat_i[p]);
    for (int p = 0; p < WritePorts; p++) write_beats = write_beats + 64'(write_beat_i[p]);
  end

  always_comb begin
    c_d = c_q;
    if (launch_i) begin
      c_d = '0;
    end else begin
      if (busy_i) c_d.busy = c_q.busy + 64'd1;
      c_d.read_bytes = c_q.read_bytes + BeatBytes * read_beats;
      c_d.write_bytes = c_q.write_bytes + BeatBytes * write_beats;
      if (stall_i) c_d.stall = c_q.stall + 64'd1;
      if (finished_i) begin
        c_d.macs        = c_q.macs + macs_i;
        c_d.descriptors = c_q.descriptors + 32'd1;
      end
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) c_q <= '0;
    else c_q <= c_d;
  end

  assign busy_cycles_o  = c_q.busy;
  assign macs_o         = c_q.macs;
  assign read_bytes_o   = c_q.read_bytes;
  assign write_bytes_o  = c_q.write_bytes;
  assign stall_cycles_o = c_q.stall;
  assign descriptors_o  = c_q.descriptors;
endmodule
