# A small web app from Ruby's standard library (WEBrick + ERB) whose one
# page allocates like a template render: a list of records turned into
# hashes, formatted strings and an HTML table, ~2 000 objects per request.
#
#   ruby app.rb PORT
require "webrick"
require "erb"

PORT = Integer(ARGV.fetch(0, "8080"))

TEMPLATE = ERB.new(<<~HTML, trim_mode: "-")
  <!doctype html>
  <html><head><title><%= title %></title></head><body>
  <h1><%= ERB::Util.h(title) %></h1>
  <table>
  <%- rows.each do |r| -%>
    <tr class="<%= r[:odd] ? "odd" : "even" %>"><td><%= r[:id] %></td><td><%= ERB::Util.h(r[:name]) %></td><td><%= format("%.2f", r[:price]) %></td><td><%= r[:tags].join(", ") %></td></tr>
  <%- end -%>
  </table>
  </body></html>
HTML

def rows
  (1..200).map do |i|
    { id: i, odd: i.odd?, name: "Item #{i} <#{(i * 7919) % 1000}>",
      price: i * 1.25, tags: %w[new sale used].rotate(i % 3).first(2) }
  end
end

server = WEBrick::HTTPServer.new(
  Port: PORT, BindAddress: "127.0.0.1",
  Logger: WEBrick::Log.new($stderr, WEBrick::Log::WARN), AccessLog: []
)
server.mount_proc("/") do |_req, res|
  title = "Catalogue"
  res["Content-Type"] = "text/html"
  res.body = TEMPLATE.result(binding)
end
# GC counters since boot, to see what the GC variables changed:
#   curl -s http://127.0.0.1:PORT/gc
server.mount_proc("/gc") do |_req, res|
  s = GC.stat
  res["Content-Type"] = "text/plain"
  res.body = format("gc_count=%d minor=%d major=%d heap_available_slots=%d " \
                    "malloc_increase_bytes_limit=%d total_allocated_objects=%d\n",
                    s[:count], s[:minor_gc_count], s[:major_gc_count],
                    s[:heap_available_slots], s[:malloc_increase_bytes_limit],
                    s[:total_allocated_objects])
end
trap("TERM") { server.shutdown }
trap("INT") { server.shutdown }
$stderr.puts "listening on 127.0.0.1:#{PORT} (ruby #{RUBY_VERSION})"
server.start
