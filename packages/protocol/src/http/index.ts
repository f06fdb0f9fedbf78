/** The HTTP API's schemas, its route list and the generated reference (re-exported by the package index). */
export * from './http-schemas.js';
export * from './security-schemas.js';
export * from './minecraft-http-schemas.js';
export * from './minecraft-channels-http-schemas.js';
export * from './pairing-schemas.js';
export * from './models-http-schemas.js';
export { HTTP_RECORDS, HTTP_ROUTES, type HttpRouteSpec } from './http-routes.js';
export { HTTP_DOC_BEGIN, HTTP_DOC_END, renderHttpApiReference, withHttpApiReference } from './http-doc.js';
export * from './event-schemas.js';
export * from './schedule-schemas.js';
export * from './task-kind-schemas.js';
